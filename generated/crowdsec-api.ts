// Generated from openapi/ by `npm run generate`. Do not edit.
export interface paths {
    "/decisions/stream": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Pull the decisions a bouncer lacks
         * @description With `startup=true`: every decision in `new`; in `deleted` the addresses that
         *     left the list since this bouncer's previous pull, when it had one and that
         *     list is still kept. Without it (or `false`): only what changed since this
         *     bouncer's previous pull, renewals included (see the document's description).
         *     The filters narrow both lists; `scopes` defaults to `ip,range`.
         *
         *     - **Access:** a bouncer key (`X-Api-Key`).
         *     - **Quota:** none. Pull every 10 seconds or more.
         */
        get: operations["getDecisionsStream"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/decisions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Look up the decisions about an address or range
         * @description The current decisions matching the filters, as live-mode bouncers ask for
         *     the address of each client. `ip=X` is `scope=ip&value=X`; `range=R` asks
         *     about a range. With `contains=true` (the default) a decision is returned when
         *     it covers the whole address or range asked about; with `contains=false`,
         *     when it lies inside the range asked about (every listed address of a
         *     network). No decision: `null`, as the LAPI answers.
         *
         *     - **Access:** a bouncer key (`X-Api-Key`).
         *     - **Quota:** none.
         */
        get: operations["getDecisions"];
        put?: never;
        post?: never;
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
        /** @description An error, as the LAPI answers it. */
        ErrorResponse: {
            /** @description What went wrong. */
            message: string;
            /** @description Each bad parameter, separated by semicolons, when there are several. */
            errors?: string;
        };
        /** @description One decision, as CrowdSec's LAPI sends it to bouncers. */
        Decision: {
            /** @description Identifier of this issue of the decision (a renewal has a new one). */
            id: number;
            /**
             * @description Where the decision comes from; always `trs`, this server's blacklist.
             * @constant
             */
            origin: "trs";
            /**
             * @description The remediation; always `ban`.
             * @constant
             */
            type: "ban";
            /**
             * @description What `value` is; always `Ip`, one address.
             * @constant
             */
            scope: "Ip";
            /**
             * Format: ip
             * @description The address, IPv4 or IPv6.
             */
            value: string;
            /** @description How long the decision holds, in Go's duration form (`17h52m31s`): 12 to 24 hours, renewed every 12 hours while the address stays listed. `0s` in `deleted`. */
            duration: string;
            /** @description Why: `trs/` followed by the slugs of the address's threat categories, joined by commas (`trs/brute-force,ssh`). */
            scenario: string;
        };
        /** @description The decisions to add and those to delete, removals to be applied first. */
        DecisionsStreamResponse: {
            /** @description Decisions to apply. */
            new: components["schemas"]["Decision"][];
            /** @description Decisions to lift. */
            deleted: components["schemas"]["Decision"][];
        };
        /** @description The matching decisions; `null` when there are none (as the LAPI answers). */
        GetDecisionsResponse: components["schemas"]["Decision"][] | null;
    };
    responses: {
        /** @description The server failed (500), or its database is unavailable (503, with `Retry-After`). */
        ServerError: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorResponse"];
            };
        };
        /** @description The request does not match this document: an unknown or malformed query parameter, or an `ip`, `range` or `value` that is no address or range. */
        BadRequest: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorResponse"];
            };
        };
        /** @description The `X-Api-Key` header is missing or names no bouncer. */
        Forbidden: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorResponse"];
            };
        };
    };
    parameters: {
        /**
         * @description `true` when the bouncer starts: every decision is sent in `new`. Absent or `false`: only what changed since this bouncer's previous pull.
         * @example true
         */
        Startup: boolean;
        /**
         * @description Scopes of the decisions wanted, separated by commas, in any case (`ip,range`, the default). This server issues `Ip` decisions only: a list without `ip` gets none.
         * @example ip,range
         */
        Scopes: string;
        /**
         * @description Only decisions of these origins, separated by commas. This server's decisions have the origin `trs`.
         * @example trs
         */
        Origins: string;
        /**
         * @description Words separated by commas: only decisions whose scenario contains at least one of them, in any case (`ssh` selects `trs/brute-force,ssh`).
         * @example ssh
         */
        ScenariosContaining: string;
        /**
         * @description Words separated by commas: only decisions whose scenario contains none of them, in any case.
         * @example http
         */
        ScenariosNotContaining: string;
        /**
         * @description Sent by bouncers built on recent CrowdSec client libraries; it concerns CrowdSec's central API and is ignored here.
         * @example false
         */
        CommunityPull: boolean;
        /**
         * @description Sent by bouncers built on recent CrowdSec client libraries; it concerns CrowdSec's central API and is ignored here.
         * @example false
         */
        AdditionalPull: boolean;
        /**
         * @description Scope of the decisions wanted, in any case (`ip` or `range`; several separated by commas). With `value`, the value is an address (`ip`) or a CIDR range (`range`).
         * @example ip
         */
        Scope: string;
        /**
         * @description The value asked about, compared with the decisions' values: an address finds its `Ip` decision (this server issues no other scope, so `scope=range` finds none).
         * @example 203.0.113.7
         */
        Value: string;
        /**
         * @description Only decisions of this type; this server issues `ban` decisions only.
         * @example ban
         */
        Type: string;
        /**
         * @description The address asked about; short for `scope=ip&value=...`.
         * @example 203.0.113.7
         */
        Ip: string;
        /**
         * @description The CIDR range asked about; short for `scope=range&value=...`.
         * @example 203.0.113.0/24
         */
        Range: string;
        /**
         * @description `true` (default): decisions that cover the whole address or range asked about. `false`: decisions that lie inside the range asked about.
         * @example true
         */
        Contains: boolean;
    };
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    getDecisionsStream: {
        parameters: {
            query?: {
                /**
                 * @description `true` when the bouncer starts: every decision is sent in `new`. Absent or `false`: only what changed since this bouncer's previous pull.
                 * @example true
                 */
                startup?: components["parameters"]["Startup"];
                /**
                 * @description Scopes of the decisions wanted, separated by commas, in any case (`ip,range`, the default). This server issues `Ip` decisions only: a list without `ip` gets none.
                 * @example ip,range
                 */
                scopes?: components["parameters"]["Scopes"];
                /**
                 * @description Only decisions of these origins, separated by commas. This server's decisions have the origin `trs`.
                 * @example trs
                 */
                origins?: components["parameters"]["Origins"];
                /**
                 * @description Words separated by commas: only decisions whose scenario contains at least one of them, in any case (`ssh` selects `trs/brute-force,ssh`).
                 * @example ssh
                 */
                scenarios_containing?: components["parameters"]["ScenariosContaining"];
                /**
                 * @description Words separated by commas: only decisions whose scenario contains none of them, in any case.
                 * @example http
                 */
                scenarios_not_containing?: components["parameters"]["ScenariosNotContaining"];
                /**
                 * @description Sent by bouncers built on recent CrowdSec client libraries; it concerns CrowdSec's central API and is ignored here.
                 * @example false
                 */
                community_pull?: components["parameters"]["CommunityPull"];
                /**
                 * @description Sent by bouncers built on recent CrowdSec client libraries; it concerns CrowdSec's central API and is ignored here.
                 * @example false
                 */
                additional_pull?: components["parameters"]["AdditionalPull"];
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The decisions to add and to delete. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DecisionsStreamResponse"];
                };
            };
            400: components["responses"]["BadRequest"];
            403: components["responses"]["Forbidden"];
            default: components["responses"]["ServerError"];
        };
    };
    getDecisions: {
        parameters: {
            query?: {
                /**
                 * @description Scope of the decisions wanted, in any case (`ip` or `range`; several separated by commas). With `value`, the value is an address (`ip`) or a CIDR range (`range`).
                 * @example ip
                 */
                scope?: components["parameters"]["Scope"];
                /**
                 * @description The value asked about, compared with the decisions' values: an address finds its `Ip` decision (this server issues no other scope, so `scope=range` finds none).
                 * @example 203.0.113.7
                 */
                value?: components["parameters"]["Value"];
                /**
                 * @description Only decisions of this type; this server issues `ban` decisions only.
                 * @example ban
                 */
                type?: components["parameters"]["Type"];
                /**
                 * @description The address asked about; short for `scope=ip&value=...`.
                 * @example 203.0.113.7
                 */
                ip?: components["parameters"]["Ip"];
                /**
                 * @description The CIDR range asked about; short for `scope=range&value=...`.
                 * @example 203.0.113.0/24
                 */
                range?: components["parameters"]["Range"];
                /**
                 * @description `true` (default): decisions that cover the whole address or range asked about. `false`: decisions that lie inside the range asked about.
                 * @example true
                 */
                contains?: components["parameters"]["Contains"];
                /**
                 * @description Only decisions of these origins, separated by commas. This server's decisions have the origin `trs`.
                 * @example trs
                 */
                origins?: components["parameters"]["Origins"];
                /**
                 * @description Words separated by commas: only decisions whose scenario contains at least one of them, in any case (`ssh` selects `trs/brute-force,ssh`).
                 * @example ssh
                 */
                scenarios_containing?: components["parameters"]["ScenariosContaining"];
                /**
                 * @description Words separated by commas: only decisions whose scenario contains none of them, in any case.
                 * @example http
                 */
                scenarios_not_containing?: components["parameters"]["ScenariosNotContaining"];
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The matching decisions, or `null` when there are none. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["GetDecisionsResponse"];
                };
            };
            400: components["responses"]["BadRequest"];
            403: components["responses"]["Forbidden"];
            default: components["responses"]["ServerError"];
        };
    };
}
