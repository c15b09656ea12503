// Generated from openapi/ by `npm run generate`. Do not edit.
export interface paths {
    "/check": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Check an IP address
         * @description The reputation of one address, as AbuseIPDB's `check` answers it.
         *     `maxAgeInDays` reaches at most 365 days back, which the server's report
         *     retention (`REPORT_RETENTION_DAYS`, at least 365) always covers.
         *
         *     - **Access:** every role. **Quota:** check +1.
         */
        get: operations["abuseipdbCheck"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/report": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Report an IP address
         * @description Stores a report, as AbuseIPDB's `report` does: a form (as fail2ban's
         *     `abuseipdb` action sends it with curl) or JSON. Categories are AbuseIPDB's
         *     ids, 1 to 23, which are this server's.
         *
         *     - **Access:** every role. **Quota:** report +1.
         */
        post: operations["abuseipdbReport"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/blacklist": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Download the blacklist
         * @description This server's blacklist snapshot (regenerated every 15 minutes) in
         *     AbuseIPDB's shape: JSON, or one address per line with `plaintext` or
         *     `Accept: text/plain`.
         *
         *     - **Access:** Contributor and up; Free keys get 403. **Quota:** none.
         */
        get: operations["abuseipdbBlacklist"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/bulk-report": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Report many IP addresses from a CSV file
         * @description Stores one report per line of an uploaded CSV file (`multipart/form-data`,
         *     the file in the field `csv`), as AbuseIPDB's `bulk-report` does: a header
         *     line, then `IP,Categories,ReportDate,Comment` (`ReportDate` is taken but
         *     not stored). Lines that fail are listed with their row number; the others
         *     are stored.
         *
         *     - **Access:** Enterprise and Honeypot, as `POST /api/v2/bulk-report`.
         *     - **Quota:** report +1 per line after the header, refused whole (429) when
         *       it exceeds what is left.
         */
        post: operations["abuseipdbBulkReport"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/check-block": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Check the reported addresses of a network
         * @description Every address of the network reported within `maxAgeInDays`, with its
         *     score, as AbuseIPDB's `check-block` answers it.
         *
         *     - **Access:** every role, IPv4 /16 to /32 and IPv6 /48 to /128.
         *     - **Quota:** check +1 per address returned, at least 1 per call (the rule of
         *       `GET /api/v2/check-block`); refused whole (429) when it exceeds what is
         *       left.
         */
        get: operations["abuseipdbCheckBlock"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/clear-address": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Delete your reports about an address
         * @description Deletes every report your account made about the address, as AbuseIPDB's
         *     `clear-address` does; its score is recomputed from the others at once, and
         *     it leaves the blacklist at the next regeneration if it no longer qualifies.
         *     Statistics already counted are kept.
         *
         *     - **Access:** every role. **Quota:** none.
         */
        delete: operations["abuseipdbClearAddress"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** @description An error, as AbuseIPDB answers it. */
        Errors: {
            /** @description Each problem. */
            errors: {
                /** @description What went wrong, for a person. */
                detail: string;
                /** @description The HTTP status. */
                status: number;
                /** @description The parameter at fault. */
                source?: {
                    /** @description Its name. */
                    parameter: string;
                };
            }[];
        };
        /** @description AbuseIPDB category ids (1-23), ascending. */
        CategoryIds: number[];
        /** @description One report about the address. */
        CheckReport: {
            /**
             * Format: date-time
             * @description When it was received.
             */
            reportedAt: string;
            /** @description The reporter's comment. */
            comment: string;
            categories: components["schemas"]["CategoryIds"];
            /**
             * @description Always 0 (reporters are not identified here).
             * @constant
             */
            reporterId: 0;
            /** @description Country the report was sent from, when known. */
            reporterCountryCode: string | null;
            /** @description That country's English name. */
            reporterCountryName: string | null;
        };
        /** @description The answer of `GET /check`. */
        Check: {
            /** @description The address's reputation. */
            data: {
                /**
                 * Format: ip
                 * @description The address, in canonical form.
                 */
                ipAddress: string;
                /** @description Whether it is a globally routable address. */
                isPublic: boolean;
                /**
                 * @description 4 or 6.
                 * @enum {integer}
                 */
                ipVersion: 4 | 6;
                /** @description Whether the operator whitelisted it (it then scores 0). */
                isWhitelisted: boolean;
                /** @description This server's abuse confidence score, 0-100. */
                abuseConfidenceScore: number;
                /** @description ISO 3166-1 alpha-2 code of its country, `null` when unknown. */
                countryCode: string | null;
                /** @description The country's English name (with `verbose`). */
                countryName?: string | null;
                /** @description Always `null` (no such data here). */
                usageType: null;
                /** @description Name of the network (AS) the address belongs to. */
                isp: string | null;
                /** @description Always `null` (no such data here). */
                domain: null;
                /** @description Always empty (no such data here). */
                hostnames: string[];
                /** @description Always `false` (no such data here). */
                isTor: boolean;
                /** @description Report submissions within `maxAgeInDays`. */
                totalReports: number;
                /** @description Distinct reporting accounts within `maxAgeInDays`. */
                numDistinctUsers: number;
                /**
                 * Format: date-time
                 * @description Time of the last report within `maxAgeInDays` (`+00:00` offset), `null` without one.
                 */
                lastReportedAt: string | null;
                /** @description With `verbose`, the 25 newest reports within `maxAgeInDays`. */
                reports?: components["schemas"]["CheckReport"][];
            };
        };
        /** @description A report, as fail2ban's `abuseipdb` action and AbuseIPDB clients send it. */
        ReportRequest: {
            /** @description The address reported. */
            ip: string;
            /** @description AbuseIPDB category ids from 1 to 23: separated by commas (`18,22`), as one number, or as an array. */
            categories: string | number | number[];
            /** @description What happened (log lines); kept up to 1,024 characters, longer ones shortened. */
            comment?: string;
            /** @description When the attack happened (ISO 8601); taken but not stored, reports are dated when received. */
            timestamp?: string;
        };
        /** @description The answer of `POST /report`. */
        ReportResult: {
            /** @description The reported address and its score after the report. */
            data: {
                /**
                 * Format: ip
                 * @description The address, in canonical form.
                 */
                ipAddress: string;
                /** @description Its score after the report. */
                abuseConfidenceScore: number;
            };
        };
        /** @description The answer of `GET /blacklist` as JSON. */
        Blacklist: {
            /** @description About the list. */
            meta: {
                /**
                 * Format: date-time
                 * @description When the list snapshot was generated.
                 */
                generatedAt: string;
            };
            /** @description The listed addresses, highest score first, then the most recently reported. */
            data: {
                /**
                 * Format: ip
                 * @description The address.
                 */
                ipAddress: string;
                /** @description Its country, `null` when unknown. */
                countryCode: string | null;
                /** @description Its score. */
                abuseConfidenceScore: number;
                /**
                 * Format: date-time
                 * @description Its last report (`+00:00` offset).
                 */
                lastReportedAt: string;
            }[];
        };
        /** @description One address per line, each line ending with a line feed. */
        BlacklistText: string;
        /** @description The CSV file of AbuseIPDB's bulk report: a header line, then one report per line in the columns `IP,Categories,ReportDate,Comment` (categories separated by commas, the field quoted: `"18,22"`). At most 10,000 lines and 2 MiB. */
        BulkReportRequest: {
            /** @description The CSV file. */
            csv: string;
        };
        /** @description The answer of `POST /bulk-report`. */
        BulkReportResult: {
            /** @description What was stored and what was refused. */
            data: {
                /** @description Lines stored as reports. */
                savedReports: number;
                /** @description Lines refused, each with why. */
                invalidReports: {
                    /** @description Why it was refused. */
                    error: string;
                    /** @description The address of the line, as sent. */
                    input: string;
                    /** @description The line's number in the file, the header being line 1. */
                    rowNumber: number;
                }[];
            };
        };
        /** @description The answer of `GET /check-block`. */
        CheckBlock: {
            /** @description The network and its reported addresses. */
            data: {
                /**
                 * Format: ip
                 * @description The network's first address.
                 */
                networkAddress: string;
                /**
                 * Format: ip
                 * @description Its netmask.
                 */
                netmask: string;
                /**
                 * Format: ip
                 * @description Its first usable host (the second address of IPv4 networks up to /30).
                 */
                minAddress: string;
                /**
                 * Format: ip
                 * @description Its last usable host.
                 */
                maxAddress: string;
                /** @description How many hosts it holds; a decimal string when too large for a JSON number (IPv6). */
                numPossibleHosts: number | string;
                /** @description What kind of address space it is (`Internet`, `Private`, `Loopback`, ...). */
                addressSpaceDesc: string;
                /** @description Its addresses reported within `maxAgeInDays`, highest score first. */
                reportedAddress: {
                    /**
                     * Format: ip
                     * @description The address.
                     */
                    ipAddress: string;
                    /** @description Its report submissions. */
                    numReports: number;
                    /**
                     * Format: date-time
                     * @description Its last report.
                     */
                    mostRecentReport: string;
                    /** @description Its score. */
                    abuseConfidenceScore: number;
                    /** @description Its country, `null` when unknown. */
                    countryCode: string | null;
                }[];
            };
        };
        /** @description The answer of `DELETE /clear-address`. */
        ClearAddress: {
            /** @description How many of your reports were deleted. */
            data: {
                /** @description Reports of your account about the address that were deleted. */
                numReportsDeleted: number;
            };
        };
    };
    responses: {
        /** @description The server failed (500), or its database is unavailable (503). */
        ServerError: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Errors"];
            };
        };
        /** @description The key is missing, unknown or revoked. */
        Unauthorized: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Errors"];
            };
        };
        /** @description A parameter is missing, malformed or out of range, or the request is refused (a private address reported, a network too wide). */
        UnprocessableEntity: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Errors"];
            };
        };
        /** @description The daily counter the operation charges is used up (or the server-error budget of the key); nothing was charged. Wait `Retry-After` seconds. */
        TooManyRequests: {
            headers: {
                "Retry-After": components["headers"]["Retry-After"];
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Errors"];
            };
        };
        /** @description The body cannot be read (malformed JSON or form). */
        BadRequest: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Errors"];
            };
        };
        /** @description The body or the CSV file is larger than the operation takes: a body above 3 MiB or a CSV file above 2 MiB, or a body above 64 KiB in a request without a valid key (the key is checked before the body is read). */
        PayloadTooLarge: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Errors"];
            };
        };
        /** @description The body is sent in a media type the operation does not take. */
        UnsupportedMediaType: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Errors"];
            };
        };
        /** @description The list is unchanged since the `ETag` sent in `If-None-Match`; no body. */
        NotModified: {
            headers: {
                ETag: components["headers"]["ETag"];
                [name: string]: unknown;
            };
            content?: never;
        };
        /** @description The key's role lacks the operation (see the quota table). */
        Forbidden: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Errors"];
            };
        };
    };
    parameters: {
        /**
         * @description The IPv4 or IPv6 address (`ip`: a dotted-quad IPv4 address or an IPv6 address in any RFC 4291 text form). A malformed one is refused with 422 and charges nothing.
         * @example 203.0.113.7
         */
        IpAddress: string;
        /**
         * @description Only reports of the last this many days count (1-365).
         * @example 90
         */
        MaxAgeInDays: number;
        /**
         * @description A flag: present (`verbose`, `verbose=true`) adds `countryName` and the reports of the window (the 25 newest). `false` or `0` leaves them out.
         * @example true
         */
        Verbose: "" | "true" | "True" | "1" | "false" | "False" | "0";
        /**
         * @description The lowest abuse confidence score listed (25-100).
         * @example 90
         */
        ConfidenceMinimum: number;
        /**
         * @description At most this many addresses, highest scores first.
         * @example 10000
         */
        Limit: number;
        /**
         * @description A flag: present (`plaintext`, `plaintext=true`) answers `text/plain`, one address per line, as does the header `Accept: text/plain`.
         * @example true
         */
        Plaintext: "" | "true" | "True" | "1" | "false" | "False" | "0";
        /**
         * @description Only addresses of these countries (ISO 3166-1 alpha-2 codes separated by commas).
         * @example CN,RU
         */
        OnlyCountries: string;
        /**
         * @description Leave out the addresses of these countries (codes separated by commas).
         * @example US,DE
         */
        ExceptCountries: string;
        /**
         * @description Only IPv4 (`4`) or only IPv6 (`6`) addresses.
         * @example 4
         */
        IpVersion: 4 | 6;
        /**
         * @description The network in CIDR notation: IPv4 from /16 to /32, IPv6 from /48 to /128.
         * @example 203.0.113.0/24
         */
        Network: string;
    };
    requestBodies: never;
    headers: {
        /**
         * @description Daily limit of the counter the operation charges (`-1`, unlimited).
         * @example 1000
         */
        "X-RateLimit-Limit": number;
        /**
         * @description What is left of it today (`-1`, unlimited).
         * @example 999
         */
        "X-RateLimit-Remaining": number;
        /**
         * @description When it restarts, in UTC epoch seconds (the next 00:00 UTC).
         * @example 1763683200
         */
        "X-RateLimit-Reset": number;
        /**
         * @description Seconds to wait before the counter has room again.
         * @example 3600
         */
        "Retry-After": number;
        /**
         * @description Entity tag of the list as generated for these parameters; send it in `If-None-Match`.
         * @example "bl-9f86d081884c7d65"
         */
        ETag: string;
    };
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    abuseipdbCheck: {
        parameters: {
            query: {
                /**
                 * @description The IPv4 or IPv6 address (`ip`: a dotted-quad IPv4 address or an IPv6 address in any RFC 4291 text form). A malformed one is refused with 422 and charges nothing.
                 * @example 203.0.113.7
                 */
                ipAddress: components["parameters"]["IpAddress"];
                /**
                 * @description Only reports of the last this many days count (1-365).
                 * @example 90
                 */
                maxAgeInDays?: components["parameters"]["MaxAgeInDays"];
                /**
                 * @description A flag: present (`verbose`, `verbose=true`) adds `countryName` and the reports of the window (the 25 newest). `false` or `0` leaves them out.
                 * @example true
                 */
                verbose?: components["parameters"]["Verbose"];
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The address's reputation. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Check"];
                };
            };
            401: components["responses"]["Unauthorized"];
            422: components["responses"]["UnprocessableEntity"];
            429: components["responses"]["TooManyRequests"];
            default: components["responses"]["ServerError"];
        };
    };
    abuseipdbReport: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/x-www-form-urlencoded": components["schemas"]["ReportRequest"];
                "application/json": components["schemas"]["ReportRequest"];
            };
        };
        responses: {
            /** @description The report was stored. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ReportResult"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            413: components["responses"]["PayloadTooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            422: components["responses"]["UnprocessableEntity"];
            429: components["responses"]["TooManyRequests"];
            default: components["responses"]["ServerError"];
        };
    };
    abuseipdbBlacklist: {
        parameters: {
            query?: {
                /**
                 * @description The lowest abuse confidence score listed (25-100).
                 * @example 90
                 */
                confidenceMinimum?: components["parameters"]["ConfidenceMinimum"];
                /**
                 * @description At most this many addresses, highest scores first.
                 * @example 10000
                 */
                limit?: components["parameters"]["Limit"];
                /**
                 * @description A flag: present (`plaintext`, `plaintext=true`) answers `text/plain`, one address per line, as does the header `Accept: text/plain`.
                 * @example true
                 */
                plaintext?: components["parameters"]["Plaintext"];
                /**
                 * @description Only addresses of these countries (ISO 3166-1 alpha-2 codes separated by commas).
                 * @example CN,RU
                 */
                onlyCountries?: components["parameters"]["OnlyCountries"];
                /**
                 * @description Leave out the addresses of these countries (codes separated by commas).
                 * @example US,DE
                 */
                exceptCountries?: components["parameters"]["ExceptCountries"];
                /**
                 * @description Only IPv4 (`4`) or only IPv6 (`6`) addresses.
                 * @example 4
                 */
                ipVersion?: components["parameters"]["IpVersion"];
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The list. */
            200: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Blacklist"];
                    "text/plain": components["schemas"]["BlacklistText"];
                };
            };
            304: components["responses"]["NotModified"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            422: components["responses"]["UnprocessableEntity"];
            429: components["responses"]["TooManyRequests"];
            default: components["responses"]["ServerError"];
        };
    };
    abuseipdbBulkReport: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "multipart/form-data": components["schemas"]["BulkReportRequest"];
            };
        };
        responses: {
            /** @description What was stored and what was refused. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BulkReportResult"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            413: components["responses"]["PayloadTooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            422: components["responses"]["UnprocessableEntity"];
            429: components["responses"]["TooManyRequests"];
            default: components["responses"]["ServerError"];
        };
    };
    abuseipdbCheckBlock: {
        parameters: {
            query: {
                /**
                 * @description The network in CIDR notation: IPv4 from /16 to /32, IPv6 from /48 to /128.
                 * @example 203.0.113.0/24
                 */
                network: components["parameters"]["Network"];
                /**
                 * @description Only reports of the last this many days count (1-365).
                 * @example 90
                 */
                maxAgeInDays?: components["parameters"]["MaxAgeInDays"];
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The network and its reported addresses. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CheckBlock"];
                };
            };
            401: components["responses"]["Unauthorized"];
            422: components["responses"]["UnprocessableEntity"];
            429: components["responses"]["TooManyRequests"];
            default: components["responses"]["ServerError"];
        };
    };
    abuseipdbClearAddress: {
        parameters: {
            query: {
                /**
                 * @description The IPv4 or IPv6 address (`ip`: a dotted-quad IPv4 address or an IPv6 address in any RFC 4291 text form). A malformed one is refused with 422 and charges nothing.
                 * @example 203.0.113.7
                 */
                ipAddress: components["parameters"]["IpAddress"];
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description How many reports were deleted. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ClearAddress"];
                };
            };
            401: components["responses"]["Unauthorized"];
            422: components["responses"]["UnprocessableEntity"];
            429: components["responses"]["TooManyRequests"];
            default: components["responses"]["ServerError"];
        };
    };
}
