// Generated from openapi/ by `npm run generate`. Do not edit.
export interface paths {
    "/payments": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * A bundle bought or refunded at the payment provider
         * @description The payment provider's signed event. `X-Signature: t=<unix s>,v1=<hex
         *     HMAC-SHA256(PAYMENT_WEBHOOK_SECRET, "<t>.<raw body>")>`; an event signed
         *     more than PAYMENT_WEBHOOK_TOLERANCE_SECONDS away from now (either way) is
         *     refused as stale. An event id is applied once, however often it is
         *     delivered (`duplicate: true` after the first).
         */
        post: operations["receivePaymentEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/stripe": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * A Stripe event about a bundle's Checkout Session, charge or dispute
         * @description Stripe's signed event (`Stripe-Signature`, checked with
         *     STRIPE_WEBHOOK_SECRET on the raw body; a time more than
         *     PAYMENT_WEBHOOK_TOLERANCE_SECONDS away from now either way is stale).
         *     A paid Checkout Session credits its bundle, a charge refunded in full or a
         *     dispute opened takes it back, a dispute won gives it back; every other
         *     event is acknowledged and ignored (`ignored` says why). Exists where
         *     STRIPE_SECRET_KEY is set; 404 elsewhere.
         */
        post: operations["receiveStripeEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/sms/{provider}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The SMS provider, as RELAY_SMS_PROVIDER names it; only the configured one's path exists.
                 * @example twilio
                 */
                provider: string;
            };
            cookie?: never;
        };
        /**
         * A delivery receipt in the query (Vonage)
         * @description The configured SMS provider's delivery receipt, believed only once its
         *     signature verifies against the public URL the provider was given
         *     (RELAY_RECEIPT_BASE_URL + this path, never the request's Host) and the
         *     raw body. Twilio and Plivo post forms, Vonage sends JSON or a GET with
         *     its fields in the query; a method the configured provider does not use
         *     is refused with 405.
         */
        get: operations["receiveSmsReceiptQuery"];
        put?: never;
        /**
         * A delivery receipt in the body
         * @description The configured SMS provider's delivery receipt, believed only once its
         *     signature verifies against the public URL the provider was given
         *     (RELAY_RECEIPT_BASE_URL + this path, never the request's Host) and the
         *     raw body. Twilio and Plivo post forms, Vonage sends JSON or a GET with
         *     its fields in the query; a method the configured provider does not use
         *     is refused with 405.
         */
        post: operations["receiveSmsReceipt"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** @description Every error of a webhook. */
        WebhookError: {
            /** @constant */
            ok: false;
            /** @description What went wrong, e.g. `invalid_signature`, `stale_event`, `unknown_bundle`. */
            code: string;
            message: string;
            /** @description Each invalid field, when the request does not match this document. */
            errors?: {
                /** @enum {string} */
                location: "query" | "path" | "header" | "body";
                name: string;
                message: string;
            }[];
        };
    };
    responses: {
        /** @description The request does not match this document, or the event is stale or not a bundle event. */
        BadRequest: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                /**
                 * @example {
                 *       "ok": false,
                 *       "code": "stale_event",
                 *       "message": "The event was signed more than 300 seconds away from now."
                 *     }
                 */
                "application/json": components["schemas"]["WebhookError"];
            };
        };
        /** @description The signature is missing or does not match the body. */
        Unauthorized: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                /**
                 * @example {
                 *       "ok": false,
                 *       "code": "invalid_signature",
                 *       "message": "The signature does not match the body."
                 *     }
                 */
                "application/json": components["schemas"]["WebhookError"];
            };
        };
        /** @description This webhook is not configured on this server. */
        NotFound: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                /**
                 * @example {
                 *       "ok": false,
                 *       "code": "not_found",
                 *       "message": "No SMS provider posts receipts to this server at this path."
                 *     }
                 */
                "application/json": components["schemas"]["WebhookError"];
            };
        };
        /** @description The method is not one the webhook takes (`Allow` names those it does). */
        MethodNotAllowed: {
            headers: {
                /** @description The methods the webhook takes. */
                Allow?: string;
                [name: string]: unknown;
            };
            content: {
                /**
                 * @example {
                 *       "ok": false,
                 *       "code": "method_not_allowed",
                 *       "message": "Receipts are POST requests."
                 *     }
                 */
                "application/json": components["schemas"]["WebhookError"];
            };
        };
        /** @description The body is larger than the webhook takes. */
        PayloadTooLarge: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                /**
                 * @example {
                 *       "ok": false,
                 *       "code": "payload_too_large",
                 *       "message": "The request body is larger than the limit of 65536 bytes."
                 *     }
                 */
                "application/json": components["schemas"]["WebhookError"];
            };
        };
        /** @description The body is not of a type the webhook takes. */
        UnsupportedMediaType: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                /**
                 * @example {
                 *       "ok": false,
                 *       "code": "unsupported_media_type",
                 *       "message": "The request body must be sent as application/json."
                 *     }
                 */
                "application/json": components["schemas"]["WebhookError"];
            };
        };
        /** @description The event names a bundle or account the ledger cannot apply it to. */
        Unprocessable: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                /**
                 * @example {
                 *       "ok": false,
                 *       "code": "unknown_bundle",
                 *       "message": "bundle svc_x is not a bundle of this server"
                 *     }
                 */
                "application/json": components["schemas"]["WebhookError"];
            };
        };
        /** @description The webhook's secret is not configured, or the database is unavailable. */
        Unavailable: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                /**
                 * @example {
                 *       "ok": false,
                 *       "code": "not_configured",
                 *       "message": "PAYMENT_WEBHOOK_SECRET is not set on this server."
                 *     }
                 */
                "application/json": components["schemas"]["WebhookError"];
            };
        };
        /** @description An unexpected error, logged. */
        ServerError: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                /**
                 * @example {
                 *       "ok": false,
                 *       "code": "internal_error",
                 *       "message": "An unexpected error occurred. It has been logged."
                 *     }
                 */
                "application/json": components["schemas"]["WebhookError"];
            };
        };
    };
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    receivePaymentEvent: {
        parameters: {
            query?: never;
            header?: {
                /** @description `t=<unix seconds>,v1=<hex HMAC-SHA256>` of `"<t>.<raw body>"`; checked by the server, 401 when missing or wrong. */
                "X-Signature"?: string;
            };
            path?: never;
            cookie?: never;
        };
        /** @description The event, at most 64 KiB. */
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "id": "evt_1",
                 *       "type": "bundle.purchased",
                 *       "created": 1796000000,
                 *       "data": {
                 *         "account_id": 42,
                 *         "bundle_id": "svc_mail_bundle_1000"
                 *       }
                 *     }
                 */
                "application/json": {
                    id: string;
                    /** @enum {string} */
                    type: "bundle.purchased" | "bundle.refunded";
                    /** @description When the event happened (unix seconds). */
                    created?: number;
                    data: {
                        account_id: number;
                        bundle_id: string;
                    };
                };
            };
        };
        responses: {
            /** @description Applied, or a duplicate of an event applied before. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "ok": true,
                     *       "duplicate": false,
                     *       "channel": "mail",
                     *       "balance": 1000
                     *     }
                     */
                    "application/json": {
                        /** @constant */
                        ok: true;
                        duplicate: boolean;
                        /** @enum {string} */
                        channel: "mail" | "sms";
                        balance: number;
                    };
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            413: components["responses"]["PayloadTooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            422: components["responses"]["Unprocessable"];
            503: components["responses"]["Unavailable"];
            default: components["responses"]["ServerError"];
        };
    };
    receiveStripeEvent: {
        parameters: {
            query?: never;
            header?: {
                /** @description Stripe's `t=…,v1=…` signature of the raw body; checked by the server, 400 when missing or wrong. */
                "Stripe-Signature"?: string;
            };
            path?: never;
            cookie?: never;
        };
        /** @description The event as Stripe sends it, at most 256 KiB. */
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "id": "evt_1",
                 *       "object": "event",
                 *       "type": "checkout.session.completed",
                 *       "data": {
                 *         "object": {
                 *           "id": "cs_test_1",
                 *           "payment_status": "paid"
                 *         }
                 *       }
                 *     }
                 */
                "application/json": {
                    id: string;
                    type: string;
                } & {
                    [key: string]: unknown;
                };
            };
        };
        responses: {
            /**
             * @description Handled: applied (`duplicate` when it was before), ignored (`ignored`
             *     says why), or refused by the ledger (`ok: false` with its `code`: Stripe
             *     would only retry it).
             */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "ok": true,
                     *       "duplicate": false,
                     *       "channel": "sms",
                     *       "balance": 500
                     *     }
                     */
                    "application/json": {
                        ok: boolean;
                        duplicate?: boolean;
                        ignored?: string;
                        /** @enum {string} */
                        channel?: "mail" | "sms";
                        balance?: number;
                        code?: string;
                        message?: string;
                    };
                };
            };
            400: components["responses"]["BadRequest"];
            404: components["responses"]["NotFound"];
            413: components["responses"]["PayloadTooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            503: components["responses"]["Unavailable"];
            default: components["responses"]["ServerError"];
        };
    };
    receiveSmsReceiptQuery: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The SMS provider, as RELAY_SMS_PROVIDER names it; only the configured one's path exists.
                 * @example twilio
                 */
                provider: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /**
             * @description Recorded (`matched`: it concerned a message of this server); a receipt
             *     about no message of ours is acknowledged too, so the provider stops
             *     retrying it.
             */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "ok": true,
                     *       "matched": true
                     *     }
                     */
                    "application/json": {
                        /** @constant */
                        ok: true;
                        matched: boolean;
                    };
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            404: components["responses"]["NotFound"];
            405: components["responses"]["MethodNotAllowed"];
            413: components["responses"]["PayloadTooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            default: components["responses"]["ServerError"];
        };
    };
    receiveSmsReceipt: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The SMS provider, as RELAY_SMS_PROVIDER names it; only the configured one's path exists.
                 * @example twilio
                 */
                provider: string;
            };
            cookie?: never;
        };
        /** @description The provider's fields, at most 16 KiB, as a form or JSON. */
        requestBody?: {
            content: {
                /**
                 * @example {
                 *       "MessageSid": "SM0123456789abcdef0123456789abcdef",
                 *       "MessageStatus": "delivered"
                 *     }
                 */
                "application/x-www-form-urlencoded": {
                    [key: string]: string;
                };
                /**
                 * @example {
                 *       "messageId": "0A0000000123ABCD1",
                 *       "status": "delivered"
                 *     }
                 */
                "application/json": {
                    [key: string]: unknown;
                };
            };
        };
        responses: {
            /**
             * @description Recorded (`matched`: it concerned a message of this server); a receipt
             *     about no message of ours is acknowledged too, so the provider stops
             *     retrying it.
             */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "ok": true,
                     *       "matched": true
                     *     }
                     */
                    "application/json": {
                        /** @constant */
                        ok: true;
                        matched: boolean;
                    };
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            404: components["responses"]["NotFound"];
            405: components["responses"]["MethodNotAllowed"];
            413: components["responses"]["PayloadTooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            default: components["responses"]["ServerError"];
        };
    };
}
