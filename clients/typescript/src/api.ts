// Generated from openapi/ by `npm run generate`. Do not edit.
export interface paths {
    "/check-public": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Check an IP address (public)
         * @description Returns the reputation of one IPv4 or IPv6 address: score, number of reports,
         *     categories, last report, country and network operator. With `verbose=true` the
         *     record adds `confidenceBreakdown` (see the score definition under
         *     `GET /check`); `debugInfo`, `isWhitelisted` and the reports themselves are only
         *     available from `GET /check`.
         *
         *     - **Access:** public, no key needed. A key that is sent must be valid.
         *     - **Quota:** without a key, +1 on the per-IP public limit; with a key, +1 on the key's daily check quota.
         *     - **Caching:** cache results for at least 15 minutes.
         */
        get: operations["checkIpPublic"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/stats-public": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get public statistics
         * @description Returns public statistics of the reputation database: totals, new addresses
         *     and reports in the last 24 hours and 7 days (rolling windows), reports per
         *     threat category and the countries with the most reported addresses.
         *
         *     - **Access:** public, no key needed. A key that is sent must be valid.
         *     - **Quota:** without a key, +1 on the per-IP public limit; with a key, +1 on the key's daily check quota.
         *     - **Caching:** the figures change continuously; cache them for at least
         *       15 minutes.
         */
        get: operations["getPublicStats"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/search-public": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Search reported IP addresses
         * @description Searches the addresses that have at least one report. `q` is read as:
         *
         *     - a complete IPv4 or IPv6 address: that address;
         *     - `AS` followed by digits (any case), such as `AS64500`: addresses announced
         *       by that autonomous system;
         *     - two letters, such as `nl`: addresses located in that country
         *       (ISO 3166-1 alpha-2, any case);
         *     - otherwise digits and dots (`203.0.113.`), or hexadecimal digits and colons
         *       containing a colon (`2001:db8:`): addresses starting with that text.
         *
         *     Any other term matches nothing. Results are ordered by score, highest first,
         *     then by number of reports; at most `limit` are returned.
         *
         *     - **Access:** public, no key needed. A key that is sent must be valid.
         *     - **Quota:** without a key, +1 on the per-IP public limit; with a key, +1 on the key's daily check quota.
         *     - **Caching:** cache results for at least 15 minutes.
         */
        get: operations["searchIpsPublic"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/categories": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List threat categories
         * @description Lists the 30 threat categories used to classify reports, with their severity
         *     (which feeds the score). Their ids are used in `categories` arrays, in
         *     `POST /report` and in the `category` filters.
         *
         *     - **Access:** public, no key needed. A key that is sent must be valid.
         *     - **Quota:** without a key, +1 on the per-IP public limit; with a key, none.
         *     - **Caching:** the catalogue rarely changes; cache it for a day.
         */
        get: operations["listCategories"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/attack-map-data": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get attack map data
         * @description Returns a dataset for drawing an attack map: report counts and average score
         *     of the 50 countries with the most reports about their addresses, country
         *     names, and the 30 cross-country connections (country of the reported address
         *     to country of the reporter) with the most reports in the rolling last
         *     24 hours.
         *
         *     - **Access:** public, no key needed. A key that is sent must be valid.
         *     - **Quota:** without a key, +1 on the per-IP public limit; with a key, +1 on the key's daily check quota.
         *     - **Caching:** the dataset is built on the server at most every 30 minutes;
         *       calls within that window get the cached dataset, so polling more often is
         *       not useful.
         */
        get: operations["getAttackMapData"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/statistics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get service statistics
         * @description Returns service-wide counters: reported addresses, reports, reports today and
         *     active API keys.
         *
         *     - **Access:** public, no key needed. A key that is sent must be valid.
         *     - **Quota:** none, but without a key it is rate-limited per source address like the other public operations: while the per-IP public limit of the calling address is used up, it answers 429. With a key it is never refused.
         *     - **Caching:** cache the counters for at least 15 minutes.
         *
         *     An earlier variant of this operation returned per-account statistics for a
         *     `period`. The `period` parameter is still accepted and ignored.
         */
        get: operations["getStatistics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/blacklist-categories": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List blacklist categories
         * @description Lists the thematic blacklist categories (SSH, web attacks, mail spam,
         *     scanners, brute force, botnets, malware and more). Each one groups threat
         *     categories: pass its `categories` ids, joined with commas, as the `category`
         *     filter of `GET /blacklist` to get a list for one kind of service, and use the
         *     `name` to read `byCategory` of `GET /blacklist-stats`.
         *
         *     - **Access:** public, no key needed. A key that is sent must be valid.
         *     - **Quota:** none.
         *     - **Caching:** the catalogue rarely changes; cache it for a day.
         */
        get: operations["listBlacklistCategories"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/blacklist-stats": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get blacklist statistics
         * @description Returns counts of the current blacklist snapshot: reported addresses, listed
         *     addresses per confidence band (`90-100`, `75-89`, `50-74`, `25-49`) and per
         *     blacklist category.
         *
         *     - **Access:** public, no key needed. A key that is sent must be valid.
         *     - **Quota:** none.
         *     - **Caching:** the snapshot is regenerated every 15 minutes; cache the counts
         *       for 15 minutes.
         */
        get: operations["getBlacklistStats"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/check": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Check an IP address
         * @description Returns the reputation of one IPv4 or IPv6 address with the full-check
         *     additions: `isWhitelisted` always; `confidenceBreakdown` and `debugInfo` with
         *     `verbose=true`; `reports`, the 25 newest reports about the address, with
         *     `include_reports=true`.
         *
         *     - **Access:** any valid key (every role).
         *     - **Quota:** +1 on the daily check quota.
         *     - **Caching:** cache results for at least 15 minutes.
         *
         *     ## Abuse confidence score
         *
         *     `abuseConfidencePercentage` is computed from all stored reports about the
         *     address. A report into which later submissions were aggregated counts once
         *     per submission, that is `1 + aggregationCount` times; `debugInfo.reportCount`
         *     is the number of submissions.
         *
         *     1. **Age weight.** Each submission is weighted by its age in days:
         *        `w = 0.5 ^ (ageDays / 14)` (half-life 14 days).
         *        `debugInfo.effectiveReportCount` is `round(Σw)` and
         *        `debugInfo.timeDampeningFactor` is `Σw / reportCount`.
         *     2. **`reportScore`** `= 100 × (1 − e^(−Σw / 6))`: the volume of recent
         *        reports, rising towards 100.
         *     3. **`diversityScore`** `= 100 × (1 − e^(−(uniqueReporters − 1) / 4))`: the
         *        number of distinct reporting accounts (`debugInfo.uniqueReporters`); 0 with
         *        a single reporter.
         *     4. **`recencyWeight`** `= 0.5 + 0.5 × e^(−hoursSinceLastReport / 168)`: 1.0
         *        right after a report, falling towards 0.5.
         *     5. **`severityWeight`** `= 0.6 + 0.04 × maxSeverity`, where `maxSeverity` is
         *        the highest `severity_level` (1-10, see `GET /categories`) among the
         *        reported categories: 0.64 to 1.0.
         *     6. **`honeypotBonus`** `= min(15, 5 × honeypotReportsCount)`: points for
         *        submissions made with Honeypot keys (`debugInfo.honeypotReportsCount`).
         *     7. **Raw score** `= (0.65 × reportScore + 0.35 × diversityScore) ×
         *        recencyWeight × severityWeight + honeypotBonus`.
         *     8. **`maxConfidence`** is 100, lowered by the caps listed in
         *        `constraintReasons`: `whitelisted` (the operator whitelisted the address)
         *        caps at 0, `single_reporter` (all reports from one account) at 60,
         *        `two_reporters` (from two accounts) at 85.
         *     9. **`abuseConfidencePercentage`** `= round(clamp(min(raw, maxConfidence), 0,
         *        100))`.
         *
         *     An address without reports scores 0; its breakdown values are all 0 except
         *     `maxConfidence`.
         */
        get: operations["checkIp"];
        put?: never;
        post?: never;
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
         * @description Returns every reported address inside an IPv4 network from /16 to /32 or an
         *     IPv6 network from /48 to /128, each with its score, highest first (then by
         *     address), with the network's bounds. An address without reports is not
         *     listed; a whitelisted one is listed with score 0.
         *
         *     A /24 with 40 reported addresses costs 40 checks: lower `limit` to bound the
         *     charge.
         *
         *     `summary` is the network view: how many of its reported addresses the current blacklist
         *     snapshot lists (at the list's default confidence, 75), the share of an IPv4 network that
         *     is listed, the top categories, and the IPv6 reported addresses grouped by /64.
         *
         *     - **Access:** any valid key (every role).
         *     - **Quota:** +N on the daily check quota, one per address returned (at least one per call), charged after the request's own checks: a refused request is not charged, and when N exceeds what is left of the quota the request is refused with 429 and nothing is charged.
         *     - A wider network (/15 or /47 and shorter) is refused with 422
         *       `network_too_large`. Should a network hold more than 65,536 reported
         *       addresses (only an IPv6 one can), the 65,536 most recently reported are
         *       scored and `truncated` is `true`.
         */
        get: operations["checkBlock"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/check-asn": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Check the reported addresses of an autonomous system
         * @description Returns the network view of an AS, so that an operator can judge (and block) a hostile
         *     network wholesale: its organisation and announced ranges from the server's ASN data, how
         *     many of its addresses are reported and how many the current blacklist snapshot lists (at
         *     the list's default confidence, 75), the listed share of its announced IPv4 space, the top
         *     categories, the reported addresses with their scores (highest first, then by address) and
         *     the IPv6 ones grouped by /64.
         *
         *     An address belongs to the AS GeoIP placed it in when it was first reported; addresses
         *     reported before the server stored ASNs count once the operator runs
         *     `trs geo backfill-asn` or once they are reported again. An address without reports is not
         *     listed; a whitelisted one is listed with score 0.
         *
         *     An AS with 40 reported addresses costs 40 checks: lower `limit` to bound the charge.
         *
         *     - **Access:** any valid key (every role).
         *     - **Quota:** +N on the daily check quota, one per address returned (at least one per call), charged after the request's own checks: a refused request is not charged, and when N exceeds what is left of the quota the request is refused with 429 and nothing is charged.
         *     - A special-purpose AS number (0, 23456, 64496-131071, 4200000000 and above) is refused
         *       with 400, naming `asn`.
         *     - The summary covers the 65,536 most recently reported addresses of the AS.
         */
        get: operations["checkAsn"];
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
         * @description Reports an abusive IPv4 or IPv6 address with one or more threat categories
         *     (see `GET /categories`) and an optional comment. The response gives the
         *     stored report and the address's updated score.
         *
         *     A submission by the same account for the same address within 5 minutes of
         *     that account's earlier report (measured from its `reportedAt`) is aggregated
         *     into the earlier report: the categories are merged, its `aggregationCount`
         *     goes up by one and `reportId` is the earlier report's id. Aggregated
         *     submissions still count in the score.
         *
         *     Addresses that are not globally routable (private, loopback, link-local,
         *     multicast, reserved and documentation ranges such as `192.0.2.0/24` and
         *     `2001:db8::/32`) are refused with 422 `address_not_reportable`. Category ids
         *     that are not in the catalogue are ignored and listed in `ignoredCategories`;
         *     only a report with no known id is refused (422 `unknown_category`). A comment
         *     longer than 1,024 characters is shortened, never refused.
         *
         *     The body may be JSON or a form (`application/x-www-form-urlencoded`), with
         *     `categories` as an array, a comma-separated string or a single id, as the
         *     ReportedIP clients send it.
         *
         *     `evidence` (optional, at most 16 KiB) carries the log lines that show the
         *     abuse. It is private: only the reporting account
         *     (`GET /reports/{ip}/evidence`) and the operator read it, never
         *     `GET /reports/{ip}` or any other answer. Secrets in it (e-mail addresses,
         *     Authorization headers and bearer tokens, cookies, passwords and keys in
         *     URLs, this server's keys) are removed before it is stored, and
         *     `evidenceRedactions` says what was removed. A submission aggregated into an
         *     earlier report adds its evidence to that report's, while the two fit
         *     16 KiB.
         *
         *     - **Access:** any valid key (every role).
         *     - **Quota:** +N on the daily report quota, one per report stored, charged after the request's own checks: a refused request is not charged, and when N exceeds what is left of the quota the request is refused with 429 and nothing is charged.
         */
        post: operations["reportIp"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/verify-key": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Verify an API key
         * @description Returns the role, features, daily quotas and today's usage of the key sent.
         *     Use it to check a key before putting it into service; an invalid key gets
         *     401.
         *
         *     - **Access:** any valid key (every role).
         *     - **Quota:** none. The rate-limit headers describe the check quota.
         *     - **Caching:** `usage` changes with every charged call; do not cache it.
         */
        get: operations["verifyKey"];
        put?: never;
        post?: never;
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
         * @description Downloads the blacklist: the addresses whose abuse confidence score is at
         *     least `confidence`, ordered by score, highest first, then by last report,
         *     newest first, and cut after `limit` entries.
         *
         *     - `format=json` (default): `{meta, data}`, with a `meta` of its own (not the
         *       response envelope).
         *     - `format=txt`: `text/plain`, one address per line.
         *     - `format=csv`: `text/csv`, the header line
         *       `ip,abuseConfidencePercentage,lastReportedAt,totalReports,categories`, then
         *       one line per address with the category ids joined by `|`.
         *
         *     Errors are JSON envelopes whatever the format.
         *
         *     ## Firewall formats
         *
         *     These answer `text/plain` files that the tool loads as they are; the first
         *     lines (`#` comments) say how.
         *
         *     | `format` | Load it with | What it makes |
         *     |---|---|---|
         *     | `cidr` | anything that reads CIDR lists | one block per line (`/32`, `/128` for single addresses) |
         *     | `nftables` | `nft -f FILE` | `table inet trs`, replaced in one transaction: sets `v4`, `v6` (interval sets with `aggregate=true`) and chains `input` and `forward` dropping their traffic |
         *     | `ipset` | `ipset restore -file FILE` | the `hash:net` sets `trs-v4` and `trs-v6`, filled under other names and swapped in whole |
         *     | `iptables` | `iptables-restore --noflush FILE` | the chain `trs-blacklist` with one `DROP` rule per IPv4 entry (jump to it from `INPUT`) |
         *     | `ip6tables` | `ip6tables-restore --noflush FILE` | the same for the IPv6 entries |
         *     | `nginx` | `include FILE;` in `http {}` | `geo $trs_blacklist`: 1 for listed clients, else 0 |
         *     | `rbldnsd` | `rbldnsd -b ADDR/PORT ZONE:combined:FILE` | a DNS blocklist (RFC 5782) for mail servers: each listed address answers `127.0.0.2` with a TXT naming its score, its categories and, with the server's public address, where to look it up; IPv4 (`ip4set`) and IPv6 (`ip6trie`), with the test entries `127.0.0.2` (listed) and `127.0.0.1` (not). No `since`, no `aggregate` |
         *
         *     An iptables chain is read rule by rule: for long lists prefer `ipset` or
         *     `nftables`. With `aggregate=true` the addresses are merged into the smallest
         *     set of CIDR blocks that covers exactly them (see the parameter).
         *
         *     ## Deltas
         *
         *     A client that polls often sends the `ETag` of the list it holds as `since`
         *     (with the same other parameters) and gets only what changed: `format=json`
         *     answers `{meta, data: {added, removed}}`, `txt` and `cidr` lines prefixed
         *     with `-` or `+`, `csv` a `change` column, and the firewall formats files that
         *     delete and add entries of what their full form made (removals first). The
         *     `ETag` of the answer is the current list's: keep it for the next `since`. A
         *     `since` no longer kept answers `410 Gone`: fetch the whole list again.
         *
         *     Filter by threat categories with `category` (comma-separated ids: an address
         *     is listed when it was reported with at least one of them) and combine it with
         *     `confidence` to build service-specific lists; `GET /blacklist-categories`
         *     gives ready-made groups. For automated blocking use `confidence=90`.
         *
         *     The list is regenerated on the server every 15 minutes. Every `200` and `304`
         *     carries an `ETag` that depends on the list and on every parameter shaping the
         *     answer; send it back in `If-None-Match` to get `304 Not Modified`, without a
         *     body, while the list is unchanged (with `since` too).
         *
         *     - **Access:** keys of the roles `contributor`, `professional`, `business`, `enterprise` and `honeypot`; Free keys get 403.
         *     - **Quota:** none. The rate-limit headers describe the check quota.
         *     - **Caching:** poll at most every 15 minutes, always with `If-None-Match`.
         */
        get: operations["getBlacklist"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/reports/{ip}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List reports about an IP address
         * @description Lists the stored reports about one address, newest first, one page at a
         *     time. Submissions aggregated into a report appear once, with their number in
         *     `aggregationCount`. A page beyond the last one has an empty `reports` array.
         *     Reports are kept for the server's retention (`REPORT_RETENTION_DAYS`, at
         *     least 365 days); older ones are no longer listed, and no longer count in any
         *     score or aggregate.
         *
         *     - **Access:** keys of the roles `professional`, `business`, `enterprise` and `honeypot`; Free and Contributor keys get 403.
         *     - **Quota:** none. The rate-limit headers describe the check quota.
         *     - **Caching:** cache pages for at least 15 minutes.
         */
        get: operations["listReports"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/reports/{ip}/evidence": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Read the evidence of your reports about an IP address
         * @description Lists the reports your account made about one address that carry
         *     evidence (the `evidence` of `POST /report` or the Evidence column of
         *     `POST /bulk-report`), newest first, with the evidence as it was stored:
         *     after the secrets in it were removed. Only your account's reports are
         *     listed, whichever of its keys made them; the evidence of other reporters
         *     is never shown (the operator reads it with `trs reports evidence`).
         *     Evidence is kept as long as its report and dropped with it at the end of
         *     the retention (`REPORT_RETENTION_DAYS`).
         *
         *     - **Access:** any valid key (every role).
         *     - **Quota:** none. The rate-limit headers describe the check quota.
         */
        get: operations["listReportEvidence"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/trends": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get report trends
         * @description Returns report activity over the last 24 hours (24 hourly buckets), 7 days or
         *     30 days (daily buckets, UTC days), ending with the current, partial bucket,
         *     and the 5 threat categories with the most reports in the period. With
         *     `category`, only reports carrying that category are counted: any id of the
         *     catalogue this server has enabled (`GET /categories`: the specification's 1-30,
         *     the web categories 31-58 when turned on, the operator's own up to 10000). An id
         *     that is not in it is refused with 422 `unknown_category`, as the blacklist's
         *     `category` filter is.
         *
         *     - **Access:** keys of the roles `professional`, `business`, `enterprise` and `honeypot`; Free and Contributor keys get 403.
         *     - **Quota:** none. The rate-limit headers describe the check quota.
         *     - **Caching:** cache for 15 minutes (`24h`) or an hour (`7d`, `30d`).
         */
        get: operations["getTrends"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/bulk-check": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Check IP addresses in bulk
         * @description Checks up to 1,000 addresses in one request. Entries that are not IPv4 or
         *     IPv6 addresses are neither checked nor charged; they come back in
         *     `data.invalid`. An address listed more than once is checked once. Results keep
         *     the order of the request.
         *
         *     - **Access:** keys of the roles `professional`, `business`, `enterprise` and `honeypot`; Free and Contributor keys get 403.
         *     - **Quota:** +N on the daily check quota, one per distinct valid address (`data.checked`), charged after the request's own checks: a refused request is not charged, and when N exceeds what is left of the quota the request is refused with 429 and nothing is charged.
         *     - **Caching:** cache results for at least 15 minutes.
         */
        post: operations["bulkCheckIps"];
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
         * Report IP addresses in bulk
         * @description Submits many reports as CSV text, one report per line with the columns IP,
         *     Categories (ids joined with `|`) and Comment (optional). A first line starting
         *     with `IP` is taken as a header and skipped, as are empty lines.
         *
         *     Each line is handled like a `POST /report`, including the 5-minute
         *     aggregation and the refusal of addresses that are not globally routable.
         *     Lines are independent: valid lines are stored, refused lines are listed in
         *     `data.errors` with their line number, and the request still succeeds.
         *     `meta.message` says that the bulk report was processed.
         *
         *     At most 10,000 lines and 2 MiB (2,097,152 bytes) of CSV; larger requests are
         *     refused with 413.
         *
         *     - **Access:** keys of the roles `enterprise` and `honeypot`; Free, Contributor, Professional and Business keys get 403.
         *     - **Quota:** +N on the daily report quota, one per submitted line (a header or an empty line is none; a refused line is one), charged after the request's own checks: a refused request is not charged, and when N exceeds what is left of the quota the request is refused with 429 and nothing is charged.
         */
        post: operations["bulkReportIps"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/relay-quota": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get the relay quota
         * @description Returns the caller's relay tier and, for mail and SMS, the usage and
         *     allowance of the current monthly period (calendar month, UTC) and the prepaid
         *     bundle balances. No envelope.
         *
         *     - **Access:** keys of the roles `professional`, `business` and `enterprise`; Free, Contributor and Honeypot keys get 403 `tier_forbidden`.
         *     - **Quota:** none. The rate-limit headers describe the check quota.
         *     - **Caching:** the figures change with every send; read them when needed
         *       rather than polling. Each send also returns its channel's block in
         *       `remaining_quota`.
         */
        get: operations["getRelayQuota"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/relay-mail": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Send a 2FA e-mail
         * @description Queues a transactional 2FA e-mail for delivery through a relay verified by
         *     SPF, DKIM and DMARC. Send an HTML body, a plain-text body or both (the
         *     plain-text body is then the fallback). No envelope.
         *
         *     The send uses one message of the monthly inclusive mail quota; once that is
         *     used up, one credit of `mail_bundle_balance`. When both are exhausted the
         *     request is refused with 402 and nothing is queued. Per-recipient and per-site
         *     daily anti-fraud caps answer 429.
         *
         *     The fields of the earlier version (`to`, `html_body`, `plain_body`) are still
         *     accepted; when a field and its earlier name are both sent, the current field
         *     is used unless it is empty.
         *
         *     - **Access:** keys of the roles `professional`, `business` and `enterprise`; Free, Contributor and Honeypot keys get 403 `tier_forbidden`.
         *     - **Quota:** the monthly relay mail quota, then the mail bundle balance; no daily counter. Refused requests are not charged.
         */
        post: operations["sendRelayMail"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/relay-sms": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Send a 2FA SMS
         * @description Queues a 2FA SMS for delivery through a managed worldwide relay. Prefer a
         *     server-side template (`template_code` with `template_vars`): the text is
         *     rendered on the server, so the code never appears in client logs. Otherwise
         *     send the raw text in `message`. No envelope.
         *
         *     Templates: `2fa_code` (a sign-in or verification code), `login_code` (a
         *     one-time login code), `password_reset_code` (a password-reset code). Each
         *     renders `code` and its validity `expiry_min` in `lang` (default `en`).
         *
         *     The send uses one message of the monthly inclusive SMS quota; once that is
         *     used up, one credit of `sms_bundle_balance`. When both are exhausted the
         *     request is refused with 402 and nothing is queued. Destinations in
         *     unsupported countries are refused with 422 `country_not_supported`, numbers
         *     that cannot receive a 2FA SMS (premium-rate, shared-cost, toll-free, UAN,
         *     voicemail …) with 422 `number_type_not_supported`. Free text (`message`) is
         *     off by default: a send with `message` and no `template_code` gets 422
         *     `template_required` unless the operator allows free text to your tier. Where it
         *     is allowed, a text with a link in it (an `http(s)://` or other `scheme://` URL,
         *     a `www.` name, or a host name or IPv4 address followed by a path, such as
         *     `shop.example/login`) is refused with 422 `url_not_allowed`; a host name
         *     alone (`shop.example.com`) is not a link.
         *     Per-recipient and per-site daily anti-fraud caps answer 429; they count the
         *     sends of your account only, beside a higher guard per recipient across all
         *     accounts that holds only accounts past their first 3 messages to the
         *     recipient. A templated SMS starts with the host name of `site_url` (at most 40
         *     characters).
         *
         *     The fields of the earlier version (`to`, `vars`) are still accepted; when a
         *     field and its earlier name are both sent, the current field is used unless it
         *     is empty.
         *
         *     - **Access:** keys of the roles `professional`, `business` and `enterprise`; Free, Contributor and Honeypot keys get 403 `tier_forbidden`.
         *     - **Quota:** the monthly relay SMS quota, then the SMS bundle balance; no daily counter. Refused requests are not charged.
         */
        post: operations["sendRelaySms"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/blacklist-detailed": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Download the detailed blacklist
         * @deprecated
         * @description **Deprecated:** use `GET /blacklist`. Kept for older installations; responses
         *     carry the `Deprecation`, `Sunset` and `Link` headers.
         *
         *     Returns the same list as `GET /blacklist` with the same parameters. In the
         *     JSON form each entry adds `categories` (threat-category ids) and
         *     `countryCode`, and `meta.format` is `detailed`; `format=txt` and `format=csv`
         *     return the same text as `GET /blacklist`. `ETag` and `If-None-Match` work as
         *     for `GET /blacklist`.
         *
         *     It exports the blacklist, so it needs the blacklist feature, as `GET /blacklist`
         *     does; otherwise a Free key could read the list through it.
         *
         *     - **Access:** keys of the roles `contributor`, `professional`, `business`, `enterprise` and `honeypot`; Free keys get 403.
         *     - **Quota:** none. The rate-limit headers describe the check quota.
         *     - **Caching:** poll at most every 15 minutes, always with `If-None-Match`.
         */
        get: operations["getBlacklistDetailed"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/blacklist-combined": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Download the combined blacklist
         * @deprecated
         * @description **Deprecated:** use `GET /blacklist`. Kept for older installations; responses
         *     carry the `Deprecation`, `Sunset` and `Link` headers.
         *
         *     This endpoint once merged several source lists. It now returns the same list
         *     as `GET /blacklist`, with the same parameters and the same shapes;
         *     `meta.format` of the JSON form is `combined`. `ETag` and `If-None-Match` work
         *     as for `GET /blacklist`.
         *
         *     It exports the blacklist, so it needs the blacklist feature, as `GET /blacklist`
         *     does; otherwise a Free key could read the list through it.
         *
         *     - **Access:** keys of the roles `contributor`, `professional`, `business`, `enterprise` and `honeypot`; Free keys get 403.
         *     - **Quota:** none. The rate-limit headers describe the check quota.
         *     - **Caching:** poll at most every 15 minutes, always with `If-None-Match`.
         */
        get: operations["getBlacklistCombined"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/blacklist-export/git": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Export the blacklist as plain text
         * @deprecated
         * @description **Deprecated:** use `GET /blacklist` with `format=txt`. Kept for older
         *     installations that commit the list to a Git repository; responses carry the
         *     `Deprecation`, `Sunset` and `Link` headers.
         *
         *     Returns the list of `GET /blacklist` as plain text, one address per line,
         *     whatever `format` says (the parameter is accepted for compatibility and
         *     ignored). The other parameters, `ETag` and `If-None-Match` work as for
         *     `GET /blacklist`.
         *
         *     It exports the blacklist, so it needs the blacklist feature, as `GET /blacklist`
         *     does; otherwise a Free key could read the list through it.
         *
         *     - **Access:** keys of the roles `contributor`, `professional`, `business`, `enterprise` and `honeypot`; Free keys get 403.
         *     - **Quota:** none. The rate-limit headers describe the check quota.
         *     - **Caching:** poll at most every 15 minutes, always with `If-None-Match`.
         */
        get: operations["exportBlacklistGit"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/whitelist": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Report a false positive
         * @description Positive feedback: your site unblocked an address because it was not
         *     abusive. The feedback is recorded once per account and address (sending it
         *     again updates the reason) and lowers the address's score: each distinct
         *     account that gave feedback multiplies it by 0.8, counting at most 5
         *     (`confidenceBreakdown.feedbackWeight`, `debugInfo.positiveFeedbackCount` in
         *     `GET /check`). It does not put the address on the operator's whitelist.
         *
         *     The body may be JSON or a form, as the Hive plugin sends it.
         *
         *     - **Access:** keys of the roles `contributor`, `professional`, `business` and `enterprise`; Free and Honeypot keys get 403.
         *     - **Quota:** +N on the daily feedback quota, one per address given feedback for the first time today (a repeat is free), charged after the request's own checks: a refused request is not charged, and when N exceeds what is left of the quota the request is refused with 429 and nothing is charged.
         */
        post: operations["submitWhitelistFeedback"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/notification-config": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Read a site's notification configuration
         * @description Returns what `POST /notification-config` stored for a site with this key.
         *
         *     - **Access:** any valid key (every role).
         *     - **Quota:** none. The rate-limit headers describe the check quota.
         */
        get: operations["getNotificationConfig"];
        put?: never;
        /**
         * Save a site's notification configuration
         * @description Stores, per key and site, where notifications about the site should go: the
         *     recipients, and the sender name and address. Sending it again replaces it.
         *     The ReportedIP Hive plugin sends it when its notification settings change;
         *     the operator reads it with `GET /notification-config`. This server sends no
         *     notifications of its own from it.
         *
         *     The site of `site_url` counts among the key's sites of the day, as
         *     `X-Rip-Site` does: a new site beyond the role's sites per day is refused
         *     (`403 domain_limit_exceeded`). A key holds configurations for at most 50
         *     sites: a further site is refused (`403 notification_config_limit_exceeded`),
         *     and the sites already stored can still be updated.
         *
         *     - **Access:** any valid key (every role).
         *     - **Quota:** none. The rate-limit headers describe the check quota.
         */
        post: operations["saveNotificationConfig"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/feeds/stix": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Download the blacklist as a STIX 2.1 bundle
         * @description The blacklist as a [STIX 2.1](https://docs.oasis-open.org/cti/stix/v2.1/stix-v2.1.html)
         *     bundle, for threat-intelligence platforms (OpenCTI, MISP's STIX import, a
         *     TAXII server in front of this URL): one `identity` object naming this server,
         *     then one `indicator` per listed address, highest score first, with
         *     - `pattern` `[ipv4-addr:value = '203.0.113.7']` or
         *       `[ipv6-addr:value = '2001:db8::7']` (`pattern_type` `stix`);
         *     - `confidence`: the address's abuse confidence score (0-100);
         *     - `labels`: the names of the threat categories it was reported with;
         *     - `valid_from`, `created` and `modified`: its last report;
         *     - `indicator_types` `["malicious-activity"]` and `created_by_ref` the
         *       server's identity.
         *
         *     The ids are fixed per address (`indicator--` and a UUID v5 of the server and
         *     the address), so a platform that pulls again updates what it holds instead
         *     of adding duplicates. The same filters as `GET /blacklist` (`confidence`,
         *     `category`, `limit`), the same `ETag` and `If-None-Match` (`304`), the same
         *     snapshot, regenerated every 15 minutes.
         *
         *     - **Access:** keys of the roles `contributor`, `professional`, `business`, `enterprise` and `honeypot`; Free keys get 403.
         *     - **Quota:** none. The rate-limit headers describe the check quota.
         *     - **Caching:** poll at most every 15 minutes, always with `If-None-Match`.
         */
        get: operations["getStixFeed"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/feeds/misp/manifest.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The MISP feed's manifest
         * @description The blacklist as a [MISP feed](https://www.misp-project.org/feeds/): add it in
         *     MISP under *Sync Actions → Feeds → Add Feed* with *Source Format* "MISP
         *     Feed", *URL* `https://<this server>/api/v2/feeds/misp` and, under *Headers*,
         *     `X-Key: <your key>`. MISP reads this manifest, then each event it names
         *     (`GET /feeds/misp/{event}.json`), and fetches an event again when its
         *     `timestamp` changed.
         *
         *     The listed addresses at the default confidence (75) make one event per UTC
         *     day of their last report; an address moves to a newer day's event when it is
         *     reported again. Each event is published, with `ip-src` attributes marked for
         *     IDS use (`to_ids`), the address's threat categories as tags and its score in
         *     the comment (`score 87`). The manifest has one key per event (its UUID) with
         *     the event's `info`, `date`, `timestamp`, `analysis`, `threat_level_id`, `Orgc`
         *     and `Tag`, as MISP's own feed generator writes it.
         *
         *     - **Access:** keys of the roles `contributor`, `professional`, `business`, `enterprise` and `honeypot`; Free keys get 403.
         *     - **Quota:** none. The rate-limit headers describe the check quota.
         *     - **Caching:** MISP polls on the feed's schedule; the `ETag` lets it skip an
         *       unchanged manifest.
         */
        get: operations["getMispManifest"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/feeds/misp/{event}.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * One event of the MISP feed
         * @description One event the manifest (`GET /feeds/misp/manifest.json`) names: the listed
         *     addresses whose last report fell on its day, as MISP's feed format writes an
         *     event (`{"Event": {...}}`, its `Attribute`s of type `ip-src`). An event the
         *     current list no longer holds (its addresses were reported again, or fell
         *     below the list) answers `404`: MISP drops it at its next pull of the manifest.
         *
         *     - **Access:** keys of the roles `contributor`, `professional`, `business`, `enterprise` and `honeypot`; Free keys get 403.
         *     - **Quota:** none. The rate-limit headers describe the check quota.
         */
        get: operations["getMispEvent"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/delist-requests": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Ask for an address to be delisted
         * @description Asks the operator to review an address (or a range no wider than a `/24` or
         *     `/48`) for removal from the list. Anyone may ask, with or without a key.
         *
         *     A request made *from* the address itself (the caller's address equals `ip`,
         *     lies in the range, or, for IPv6, in the same /64) is marked as `proven` and
         *     reviewed first; any other request is not proven, and the answer says so. A
         *     confirmation link is mailed to `email`; the request reaches the operator only
         *     once it is opened (within 24 hours). The link also shows the status
         *     (`GET /delist-requests/{id}`). An approval whitelists the address for a number
         *     of days (30 by default): it leaves the next blacklist snapshot, and every
         *     bouncer's next pull as a deletion. The requester is mailed the decision.
         *
         *     Bounds against abuse: one open request per address (a second is refused with
         *     422 `delist_request_open`); one confirmation mail per address a day and
         *     DELIST_MAILS_PER_RECIPIENT_DAILY (3) per recipient, past which the request is
         *     stored but no mail goes out; DELIST_REQUESTS_PER_SOURCE_DAILY (5) requests per
         *     source address (IPv6 /64) in 24 hours; a rejected address may not be asked for
         *     again for 7 days (429 `delist_recently_rejected`). The reason is never mailed.
         *
         *     - **Access:** public, no key needed. A key that is sent must be valid.
         *     - **Quota:** without a key, +1 on the per-IP public limit; with a key, +1 on the key's daily check quota.
         */
        post: operations["createDelistRequest"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/delist-requests/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Show (and confirm) a delisting request
         * @description Shows where a delisting request stands, to whoever holds the token of its
         *     mailed link. Opening the link (this operation or the `/delist/{id}` page it
         *     points at) confirms an unconfirmed request within its 24 hours: it becomes
         *     `open` and reaches the operator. A wrong id and a wrong token are answered
         *     alike with 404; the token is compared in constant time, and only its SHA-256
         *     is stored.
         *
         *     - **Access:** public, no key needed. A key that is sent must be valid.
         *     - **Quota:** without a key, +1 on the per-IP public limit; with a key, +1 on the key's daily check quota.
         */
        get: operations["getDelistRequest"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the account's webhooks
         * @description The webhook subscriptions of the key's account (at most 10), without their
         *     secrets.
         *
         *     - **Access:** keys of the roles `business` and `enterprise`; Free, Contributor, Professional and Honeypot keys get 403.
         *     - **Quota:** none. The rate-limit headers describe the check quota.
         */
        get: operations["listWebhooks"];
        put?: never;
        /**
         * Subscribe a webhook
         * @description Subscribes an HTTPS endpoint to events, instead of polling: after each
         *     blacklist regeneration one POST per endpoint carries the addresses that were
         *     listed, delisted or whose score changed (filtered by `confidence` and
         *     `categories`, batches of at most 1000 addresses); `report.received` is sent
         *     when a report of the account is stored (through every server process from at
         *     most 5 seconds after the subscription).
         *
         *     Deliveries follow Standard Webhooks: headers `webhook-id` (`msg_…`, the same
         *     on every retry), `webhook-timestamp` (Unix seconds) and `webhook-signature`
         *     (`v1,<base64 HMAC-SHA256>`). The answer shows the signing `secret` this once.
         *     A failed delivery (no 2xx within 10 s; a redirect is a failure) is retried
         *     after 5 s, 5 min, 30 min, 2 h, 5 h and 10 h; after 24 hours of failures the
         *     endpoint is disabled and the account is mailed.
         *
         *     The URL's host is resolved now and at each delivery; addresses that are not
         *     public are refused, and the connection goes to the checked address. An
         *     account holds at most 10 webhooks (422 `webhook_limit_reached`).
         *
         *     - **Access:** keys of the roles `business` and `enterprise`; Free, Contributor, Professional and Honeypot keys get 403.
         *     - **Quota:** none. The rate-limit headers describe the check quota.
         */
        post: operations["createWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/{id}": {
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
         * Delete a webhook
         * @description Deletes a subscription of the key's account and its pending deliveries.
         *
         *     - **Access:** keys of the roles `business` and `enterprise`; Free, Contributor, Professional and Honeypot keys get 403.
         *     - **Quota:** none. The rate-limit headers describe the check quota.
         */
        delete: operations["deleteWebhook"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/{id}/test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Send a test event
         * @description Sends a `webhook.test` event to the endpoint now, signed like every delivery,
         *     and answers with the outcome of that one attempt (a test is not retried). It
         *     works on a disabled endpoint too, and a success there enables it again.
         *
         *     - **Access:** keys of the roles `business` and `enterprise`; Free, Contributor, Professional and Honeypot keys get 403.
         *     - **Quota:** none. The rate-limit headers describe the check quota.
         */
        post: operations["testWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/rules/{key}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Download a signed rule set
         * @description Rule sets the operator publishes for the ReportedIP Hive plugin to sync:
         *     `waf` (web-application firewall patterns), `bot_signatures` (verified
         *     crawlers), `disposable_domains` (throw-away e-mail domains), `scan_paths`
         *     (paths scanners probe) and `tor_exits` (Tor exit addresses). Each is signed
         *     with the operator's Ed25519 key; pin the operator's public key in the client
         *     (see the README) and it verifies every rule set before using it.
         *
         *     Send `If-None-Match` with the last `ETag` to get `304` while the rule set is
         *     unchanged. A rule set the operator has not published answers 404.
         *
         *     - **Access:** any valid key (every role).
         *     - **Quota:** none. The rate-limit headers describe the check quota.
         */
        get: operations["getRuleset"];
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
        /** @description One problem with one part of the request. */
        FieldError: {
            /**
             * @description Part of the request that holds the bad value.
             * @enum {string}
             */
            location: "path" | "query" | "header" | "body";
            /** @description Name of the parameter or header, or the path of the field inside the JSON body (for example `categories/0`); empty for the body as a whole. */
            name: string;
            /** @description What is wrong with the value. */
            message: string;
        };
        /** @description Outcome of the request, repeated from the HTTP status. */
        Meta: {
            /** @description `true` on success, `false` on error. */
            success: boolean;
            /** @description HTTP status code of the response. */
            code: number;
            /** @description Short text for people. Always present on errors; some successes omit it. */
            message?: string;
            /** @description On errors caused by the request, one item per bad parameter or field. */
            errors?: components["schemas"]["FieldError"][];
        };
        /** @description Envelope of an error response. */
        ErrorEnvelope: {
            meta: components["schemas"]["Meta"] & {
                /** @constant */
                success?: false;
                code?: number;
            };
            /** @description Always `null` on errors. */
            data: null;
            /** @description Machine-readable error code: `invalid_request` (400), `missing_api_key` or `invalid_api_key` (401), `tier_forbidden` or `domain_limit_exceeded` (403), `not_found` (404), `method_not_allowed` (405), `snapshot_expired` (410), `payload_too_large` (413), `unsupported_media_type` (415), `address_not_reportable`, `unknown_category`, `invalid_combination`, `network_too_large` or `unprocessable` (422), `internal_error` (500), `not_implemented` (501), `service_unavailable` (503). */
            code: string;
            /** @description The same text as `meta.message`, at the top level for clients that read it there, except where it also says what to do: a 401 answers `Invalid or missing API key: send it in the X-Key header.` here, while `meta.message` keeps the specification's `Invalid or missing API key.` */
            message: string;
        };
        /** @description Threat-category ids (see `GET /categories`), in ascending order; empty when none. */
        CategoryIds: number[];
        /** @description ISO 3166-1 alpha-2 country code of the address, from the server's geolocation database; `ZZ` when the country is unknown. */
        CountryCode: string;
        /** @description A cap that lowered `maxConfidence`. */
        ConstraintReason: {
            /**
             * @description `whitelisted`: the address is on the operator's whitelist (cap 0). `single_reporter`: all reports come from one account (cap 60). `two_reporters`: all reports come from two accounts (cap 85).
             * @enum {string}
             */
            code: "whitelisted" | "single_reporter" | "two_reporters";
            /** @description Highest score allowed by this constraint. */
            cap: number;
            /** @description The constraint explained for people. */
            message: string;
        };
        /** @description Components of the abuse confidence score; see the score definition in the description of `GET /check`. An address without reports has every value 0 except `maxConfidence`. */
        ConfidenceBreakdown: {
            /** @description Volume score from the age-weighted report count, 0-100. */
            reportScore: number;
            /** @description Score from the number of distinct reporting accounts, 0-100. */
            diversityScore: number;
            /** @description Factor from the time since the last report, 0.5-1.0 (0 without reports). */
            recencyWeight: number;
            /** @description Factor from the highest severity among the reported categories, 0.64-1.0 (0 without reports). */
            severityWeight: number;
            /** @description Points added for reports made with Honeypot keys, 0-15. */
            honeypotBonus: number;
            /** @description Factor from positive feedback (`POST /whitelist`): 0.8 for each distinct account that reported the address as a false positive, counting at most 5 (0.33-1.0). */
            feedbackWeight: number;
            /** @description Highest score allowed: 100, or the lowest cap in `constraintReasons`. */
            maxConfidence: number;
            /** @description The caps that apply; empty when `maxConfidence` is 100. */
            constraintReasons: components["schemas"]["ConstraintReason"][];
        };
        /** @description Reputation of one IP address, as returned by `GET /check-public`. */
        CheckPublicRecord: {
            /**
             * Format: ip
             * @description The address checked, IPv4 or IPv6 (IPv6 in compressed lower-case form).
             */
            ip: string;
            /** @description Abuse confidence score, 0-100; 0 when the address has no reports. */
            abuseConfidencePercentage: number;
            /** @description Number of report submissions about the address, aggregated submissions included. */
            totalReports: number;
            /**
             * Format: date-time
             * @description Time of the last report; `null` when there are none.
             */
            lastReportedAt: string | null;
            categories: components["schemas"]["CategoryIds"];
            countryCode: components["schemas"]["CountryCode"];
            /** @description Name of the network operator; empty string when unknown. */
            isp: string;
            confidenceBreakdown?: components["schemas"]["ConfidenceBreakdown"];
        };
        /** @description Envelope of `GET /check-public`. */
        CheckPublicEnvelope: {
            meta: components["schemas"]["Meta"];
            data: components["schemas"]["CheckPublicRecord"];
        };
        /** @description Envelope of a `429 Too Many Requests` response. */
        RateLimitedEnvelope: {
            meta: components["schemas"]["Meta"] & {
                /** @constant */
                success?: false;
                /** @constant */
                code?: 429;
            };
            data: {
                /** @description Seconds to wait before retrying; the same value as the `Retry-After` header. */
                retryAfter: number;
            };
            /** @description `rate_limited` when a daily counter is used up, `fault_budget_exceeded` when too many of the caller's requests met a server error today. */
            code: string;
            /** @description The same text as `meta.message`, at the top level for clients that read it there. */
            message: string;
        };
        /** @description Activity within a rolling window. */
        NewActivity: {
            /** @description Addresses reported for the first time within the window. */
            newIPs: number;
            /** @description Report submissions received within the window. */
            newReports: number;
        };
        /** @description Number of reports carrying one threat category. */
        CategoryCount: {
            /** @description Threat-category id. */
            id: number;
            /** @description Threat-category name. */
            name: string;
            /** @description Number of report submissions carrying the category. */
            count: number;
        };
        /** @description Number of reported addresses located in one country. */
        CountryCount: {
            code: components["schemas"]["CountryCode"];
            /** @description Reported addresses located in the country. */
            count: number;
        };
        /** @description Public statistics of the reputation database. */
        PublicStats: {
            /** @description Addresses with at least one report. */
            totalIPs: number;
            /** @description Report submissions stored. */
            totalReports: number;
            last24h: components["schemas"]["NewActivity"];
            last7d: components["schemas"]["NewActivity"];
            /** @description Every threat category with at least one report, highest count first. */
            categoryBreakdown: components["schemas"]["CategoryCount"][];
            /** @description The 10 countries with the most reported addresses, highest count first. */
            topCountries: components["schemas"]["CountryCount"][];
        };
        /** @description Envelope of `GET /stats-public`. */
        PublicStatsEnvelope: {
            meta: components["schemas"]["Meta"];
            data: components["schemas"]["PublicStats"];
        };
        /** @description One reported address matching a search. */
        SearchResultItem: {
            /**
             * Format: ip
             * @description The address, IPv4 or IPv6.
             */
            ip: string;
            /** @description Abuse confidence score, 0-100. */
            abuseConfidencePercentage: number;
            /** @description Number of report submissions about the address. */
            totalReports: number;
            countryCode: components["schemas"]["CountryCode"];
        };
        /** @description Result of a public search. */
        SearchResults: {
            /** @description The search term as interpreted (trimmed; country codes and ASNs in upper case). */
            query: string;
            /** @description Matching addresses that have at least one report, highest `abuseConfidencePercentage` first, then most reports; at most `limit` items. */
            results: components["schemas"]["SearchResultItem"][];
        };
        /** @description Envelope of `GET /search-public`. */
        SearchResultsEnvelope: {
            meta: components["schemas"]["Meta"];
            data: components["schemas"]["SearchResults"];
        };
        /** @description A threat category, used to classify reports. */
        ThreatCategory: {
            /** @description Category id, used in `categories` arrays and `category` filters. */
            id: number;
            /** @description Category name. */
            name: string;
            /** @description What the category covers. */
            description: string;
            /** @description Severity from 1 (least) to 10 (most); the highest reported severity feeds `severityWeight` of the score. */
            severity_level: number;
        };
        /** @description Envelope of `GET /categories`. */
        CategoryListEnvelope: {
            meta: components["schemas"]["Meta"];
            /** @description All threat categories, by id. */
            data: components["schemas"]["ThreatCategory"][];
        };
        /** @description Reports about addresses located in one country. */
        AttackMapCountry: {
            /** @description Report submissions about addresses in the country. */
            count: number;
            /** @description Average abuse confidence score of the country's reported addresses. */
            avgThreat: number;
        };
        /** @description Descriptive data about one country. */
        AttackMapCountryInfo: {
            /** @description English name of the country. */
            name: string;
        };
        /** @description Reports in the rolling last 24 hours from reporters in one country about addresses in another country. */
        AttackConnection: {
            /** @description Rank of the connection in this response, 1 for the one with most reports. */
            id: number;
            /** @description Country of the reported addresses. */
            source_country: components["schemas"]["CountryCode"];
            /** @description Country of the reporters, from the address each report was sent from. */
            target_country: components["schemas"]["CountryCode"];
            /** @description Average abuse confidence score of the reported addresses, rounded. */
            confidence_score: number;
            /** @description Report submissions for this pair of countries. */
            attack_count: number;
        };
        /** @description Dataset for drawing an attack map. */
        AttackMapData: {
            /** @description The 50 countries with the most report submissions about their addresses, keyed by country code. */
            country_data: {
                [key: string]: components["schemas"]["AttackMapCountry"];
            };
            /** @description Descriptive data for every country code used in this response, keyed by country code. */
            country_info: {
                [key: string]: components["schemas"]["AttackMapCountryInfo"];
            };
            /** @description Report submissions stored, all countries. */
            total_reports: number;
            /** @description Highest `count` in `country_data` (0 when empty), for scaling colours. */
            max_reports: number;
            /** @description The 30 cross-country connections with the most reports in the rolling last 24 hours, most reports first. `source_country` is the country of the reported address, `target_country` the country of the reporter; same-country pairs are excluded. */
            recent_attacks: components["schemas"]["AttackConnection"][];
            /** @description Report submissions received since 00:00 UTC today. */
            today_logs: number;
        };
        /** @description Envelope of `GET /attack-map-data`. */
        AttackMapEnvelope: {
            meta: components["schemas"]["Meta"];
            data: components["schemas"]["AttackMapData"];
        };
        /** @description Service-wide counters. */
        ServiceStatistics: {
            /** @description Addresses with at least one report. */
            total_ips: number;
            /** @description Report submissions stored. */
            total_reports: number;
            /** @description Report submissions received since 00:00 UTC today. */
            reports_today: number;
            /** @description API keys that are not revoked. */
            active_api_keys: number;
        };
        /** @description Envelope of `GET /statistics`. */
        StatisticsEnvelope: {
            meta: components["schemas"]["Meta"];
            data: components["schemas"]["ServiceStatistics"];
        };
        /** @description A thematic blacklist category. It groups threat categories for building service-specific lists: pass the ids in `categories` as the `category` filter of `GET /blacklist`. */
        BlacklistCategory: {
            /** @description Blacklist-category id. */
            id: number;
            /** @description Display name. */
            name: string;
            /** @description Stable lower-case identifier. */
            slug: string;
            /** @description What the category covers. */
            description: string;
            /** @description Ids of the threat categories this blacklist category covers. */
            categories: number[];
        };
        /** @description Envelope of `GET /blacklist-categories`. */
        BlacklistCategoryListEnvelope: {
            meta: components["schemas"]["Meta"];
            /** @description All blacklist categories, by id. */
            data: components["schemas"]["BlacklistCategory"][];
        };
        /** @description Statistics of the current blacklist snapshot. */
        BlacklistStats: {
            /** @description Addresses with at least one report, at any score. */
            total: number;
            /** @description Addresses on the community-driven (`dynamic`) list with a score of 25 or more; the sum of the `byConfidence` counts. */
            community: number;
            /** @description Addresses per abuse-confidence band. */
            byConfidence: {
                /** @description Score 90 to 100 (recommended for automated blocking). */
                "90-100": number;
                /** @description Score 75 to 89. */
                "75-89": number;
                /** @description Score 50 to 74. */
                "50-74": number;
                /** @description Score 25 to 49. */
                "25-49": number;
            };
            /** @description Addresses per blacklist category (see `GET /blacklist-categories`) with a score of 25 and above, in the order of the blacklist categories. */
            byCategory: {
                /** @description Name of the blacklist category. */
                name: string;
                /** @description Addresses in the category. */
                count: number;
            }[];
        };
        /** @description Envelope of `GET /blacklist-stats`. */
        BlacklistStatsEnvelope: {
            meta: components["schemas"]["Meta"];
            data: components["schemas"]["BlacklistStats"];
        };
        /** @description Inputs of the abuse confidence score; see the score definition in the description of `GET /check`. */
        DebugInfo: {
            /** @description Submissions about the address, aggregated submissions included. */
            reportCount: number;
            /** @description Distinct accounts that reported the address. */
            uniqueReporters: number;
            /** @description Submissions made with Honeypot keys. */
            honeypotReportsCount: number;
            /** @description Sum of the age weights of all submissions, rounded. */
            effectiveReportCount: number;
            /** @description Sum of the age weights divided by `reportCount` (0 without reports). */
            timeDampeningFactor: number;
            /** @description Distinct accounts that reported the address as a false positive (`POST /whitelist`). */
            positiveFeedbackCount: number;
        };
        /**
         * @description Role identifier. Roles in ascending order of features: `free`, `contributor`, `professional`, `business`, `enterprise`. `honeypot` is for automated reporting systems and has the features of `enterprise` except the relay.
         * @enum {string}
         */
        Role: "free" | "contributor" | "professional" | "business" | "enterprise" | "honeypot";
        /** @description One stored report about an address. */
        ReportDetail: {
            /** @description Report id. */
            id: number;
            categories: components["schemas"]["CategoryIds"];
            /** @description The reporter's comment; empty string when none was given. */
            comment: string;
            /**
             * Format: date-time
             * @description Time of the first submission of this report.
             */
            reportedAt: string;
            reporterRole: components["schemas"]["Role"];
            /** @description Further submissions by the same reporter for the same address within 5 minutes that were merged into this report; 0 when none were. */
            aggregationCount: number;
        };
        /** @description Reputation of one IP address with the full-check additions, as returned by `GET /check`. */
        CheckRecord: {
            /**
             * Format: ip
             * @description The address checked, IPv4 or IPv6 (IPv6 in compressed lower-case form).
             */
            ip: string;
            /** @description Abuse confidence score, 0-100; 0 when the address has no reports or is whitelisted. */
            abuseConfidencePercentage: number;
            /** @description Number of report submissions about the address, aggregated submissions included. */
            totalReports: number;
            /**
             * Format: date-time
             * @description Time of the last report; `null` when there are none.
             */
            lastReportedAt: string | null;
            categories: components["schemas"]["CategoryIds"];
            countryCode: components["schemas"]["CountryCode"];
            /** @description Name of the network operator; empty string when unknown. */
            isp: string;
            /** @description `true` when the operator has whitelisted the address; its score is then 0. */
            isWhitelisted: boolean;
            confidenceBreakdown?: components["schemas"]["ConfidenceBreakdown"];
            debugInfo?: components["schemas"]["DebugInfo"];
            /** @description Present when `include_reports=true`: the 25 newest reports about the address, newest first. */
            reports?: components["schemas"]["ReportDetail"][];
        };
        /** @description Envelope of `GET /check`. */
        CheckEnvelope: {
            meta: components["schemas"]["Meta"];
            data: components["schemas"]["CheckRecord"];
        };
        /** @description One reported address of a network. */
        CheckBlockAddress: {
            /**
             * Format: ip
             * @description The address.
             */
            ip: string;
            /** @description Abuse confidence score, 0-100. */
            abuseConfidencePercentage: number;
            /** @description Number of report submissions about the address. */
            totalReports: number;
            /**
             * Format: date-time
             * @description Time of the last report.
             */
            lastReportedAt: string;
            categories: components["schemas"]["CategoryIds"];
            countryCode: components["schemas"]["CountryCode"];
        };
        /** @description One IPv6 /64 network holding reported addresses. */
        Ipv6Network64: {
            /** @description The /64 in canonical CIDR form (RFC 5952). */
            network: string;
            /** @description Its reported addresses. */
            reportedCount: number;
            /** @description How many of them are listed (see `listedConfidence`). */
            listedCount: number;
            /** @description The highest score among its addresses. */
            abuseConfidencePercentage: number;
            /** @description Report submissions about its addresses, summed. */
            totalReports: number;
            /**
             * Format: date-time
             * @description Time of the last report about one of its addresses.
             */
            lastReportedAt: string;
            categories: components["schemas"]["CategoryIds"];
        };
        /** @description The network view of the reported addresses: how many of them the current blacklist snapshot lists at the list's default confidence (the addresses `GET /blacklist` returns without `confidence`), what they are reported for, and the IPv6 ones grouped by /64 (the unit an ISP hands one customer, and the one to block). It covers every reported address counted (up to 65,536, the most recently reported), not only those returned. */
        NetworkSummary: {
            /** @description How many of the reported addresses the current blacklist snapshot lists at `listedConfidence` or more. */
            listedCount: number;
            /** @description The score from which an address counts as listed (the blacklist's default `confidence`, 75). */
            listedConfidence: number;
            /** @description Listed IPv4 addresses over the IPv4 addresses of the network (a CIDR network's size, an AS's announced IPv4 space). Absent for IPv6 networks and when the size is unknown. */
            listedShare?: number;
            /** @description The most frequent categories, by how many reported addresses carry each (then by id); at most 10. */
            topCategories: {
                /** @description The threat-category id (see `GET /categories`). */
                id: number;
                /** @description Reported addresses carrying it. */
                count: number;
            }[];
            /** @description How many IPv6 /64 networks hold reported addresses. */
            ipv6NetworkCount: number;
            /** @description The /64 networks holding reported IPv6 addresses, highest score first (then most addresses, then by text); at most 100. */
            ipv6Networks: components["schemas"]["Ipv6Network64"][];
        };
        /** @description A network and the reported addresses inside it. */
        CheckBlock: {
            /** @description The network in canonical CIDR form (host bits cleared). */
            network: string;
            /**
             * Format: ip
             * @description Its first address.
             */
            networkAddress: string;
            /** @description Its prefix length. */
            prefixLength: number;
            /**
             * Format: ip
             * @description Its netmask (`255.255.255.0`; for IPv6 the mask in IPv6 notation).
             */
            netmask: string;
            /**
             * Format: ip
             * @description The lowest address of the network.
             */
            firstAddress: string;
            /**
             * Format: ip
             * @description The highest address of the network.
             */
            lastAddress: string;
            /** @description How many addresses the network holds, as a decimal string (an IPv6 /48 holds 2^80). */
            addressCount: string;
            /** @description How many addresses of the network have reports. */
            reportedCount: number;
            /** @description `true` when fewer addresses are returned than `reportedCount` (`limit`, or more than 65,536). */
            truncated: boolean;
            /** @description The reported addresses, highest score first, then in address order. */
            reported: components["schemas"]["CheckBlockAddress"][];
            summary?: components["schemas"]["NetworkSummary"];
        };
        /** @description Envelope of `GET /check-block`. */
        CheckBlockEnvelope: {
            meta: components["schemas"]["Meta"];
            data: components["schemas"]["CheckBlock"];
        };
        /** @description An autonomous system and the reported addresses GeoIP placed in it when they were first reported. */
        CheckAsn: {
            /** @description The AS number. */
            asn: number;
            /** @description The AS's organisation name from the server's ASN data (else as stored with its addresses); `null` when neither names one. */
            organisation: string | null;
            /** @description The ranges the server's ASN data assigns to the AS. Absent when the data does not name the AS, or when the operator configured a MaxMind ASN database (which cannot list them). */
            announced?: {
                /** @description Its IPv4 ranges. */
                ipv4Ranges: number;
                /** @description The IPv4 addresses in them. */
                ipv4Addresses: number;
                /** @description Its IPv6 ranges. */
                ipv6Ranges: number;
            };
            /** @description The `maxAgeInDays` asked for; `null` when every retained report counts. */
            maxAgeInDays: number | null;
            /** @description How many addresses of the AS have reports (within `maxAgeInDays`). */
            reportedCount: number;
            /** @description `true` when fewer addresses are returned than `reportedCount` (`limit`). */
            truncated: boolean;
            /** @description The reported addresses, highest score first, then in address order; at most `limit`. */
            reported: components["schemas"]["CheckBlockAddress"][];
            summary: components["schemas"]["NetworkSummary"];
        };
        /** @description Envelope of `GET /check-asn`. */
        CheckAsnEnvelope: {
            meta: components["schemas"]["Meta"];
            data: components["schemas"]["CheckAsn"];
        };
        /** @description 1 to 30 threat-category ids (see `GET /categories`), as an array of ids, as one string of ids separated by commas (`"18,31"`, the form the ReportedIP clients send), or as a single id. Repeated ids count once. Ids that are not in the catalogue are ignored and named in the answer; a report with no known id is refused with 422. */
        CategoryInput: number[] | string | number;
        /** @description Private evidence: the log lines that show the abuse (a fail2ban match, web server or mail log lines). Never public: only you (your account's keys, through `GET /reports/{ip}/evidence`) and the operator read it; `GET /reports/{ip}` and every other answer leave it out. Before it is stored the server removes what must not be kept and says so in `evidenceRedactions`: e-mail addresses, Authorization headers and bearer tokens, cookie values, credentials in URLs (`user:password@`), the values of query and form parameters and fields named like secrets (password, pass, pwd, key, api_key, token, access_token, secret, sig, signature …), JSON Web Tokens, private keys and anything shaped like an API key of this server, each replaced with a marker such as `[redacted:email]`. Line ends become line feeds and control characters other than tab are removed. At most 16,384 characters (longer: 400) and 16,384 bytes of UTF-8 (larger: 413). Kept as long as the report: it is dropped with it at the end of the retention (`REPORT_RETENTION_DAYS`). */
        EvidenceInput: string;
        /** @description A report about one IP address. */
        ReportRequest: {
            /**
             * Format: ip
             * @description The reported address, IPv4 or IPv6 (custom format `ip`). It must be globally routable: private, loopback, link-local, multicast, reserved and documentation addresses are refused with 422.
             */
            ip: string;
            categories: components["schemas"]["CategoryInput"];
            /** @description What was observed. Control characters (other than tab and line feed) are removed, and what remains is kept up to 1,024 characters: a longer comment is shortened (the answer says so) rather than refused, so that an automated reporter never loses a report to its length. Do not include personal data. Reporters with the Professional role and up can read comments through `GET /reports/{ip}`. */
            comment?: string;
            evidence?: components["schemas"]["EvidenceInput"];
        };
        /** @description What was removed from the evidence before it was stored: how many of each kind, kinds with none left out (an empty object when nothing was removed). */
        EvidenceRedactions: {
            /** @description PEM private key blocks. */
            privateKey?: number;
            /** @description Values shaped like this server's API or bouncer keys (`trs_…`, `trsb_…`). */
            apiKey?: number;
            /** @description Credentials of `Authorization` and `Proxy-Authorization` headers (the scheme is kept). */
            authorization?: number;
            /** @description `Cookie` and `Set-Cookie` headers whose values were removed (the names are kept). */
            cookie?: number;
            /** @description Bearer tokens outside an Authorization header. */
            bearer?: number;
            /** @description JSON Web Tokens. */
            jwt?: number;
            /** @description User names and passwords in URLs (`scheme://user:password@host`). */
            urlCredentials?: number;
            /** @description Values of query or form parameters named like secrets (`?password=`, `&api_key=`, `&sig=` …). */
            secretParameter?: number;
            /** @description Values of fields named like secrets (`"password": "…"`, `token: …`). */
            secretField?: number;
            /** @description E-mail addresses. */
            email?: number;
        };
        /** @description The stored report. */
        ReportResult: {
            /** @description Id of the stored report. When the submission was aggregated into your report from the last 5 minutes, the id of that report. */
            reportId: number;
            /**
             * Format: ip
             * @description The reported address.
             */
            ip: string;
            /** @description Categories of the stored report (for an aggregated submission, all categories of the report it was merged into). */
            categories: components["schemas"]["CategoryIds"];
            /** @description Abuse confidence score of the address, including this report. */
            abuseConfidencePercentage: number;
            /** @description Category ids of the submission that are not in this server's catalogue: the report was stored without them. Empty when every id was known. */
            ignoredCategories: number[];
            /** @description `true` when the comment was longer than 1,024 characters and was shortened. */
            commentTruncated: boolean;
            /** @description Present when the submission carried `evidence`: `true` when it was stored with the report. `false` only for a submission aggregated into an earlier report whose evidence together with this one would pass 16,384 bytes: the earlier evidence is kept, this one is not. */
            evidenceStored?: boolean;
            evidenceRedactions?: components["schemas"]["EvidenceRedactions"];
            /** @description Present when the submission carried `evidence`: `true` when the markers of what was removed made it longer than 16,384 bytes and its end was cut. */
            evidenceTruncated?: boolean;
        };
        /** @description Envelope of `POST /report`. */
        ReportResultEnvelope: {
            meta: components["schemas"]["Meta"];
            data: components["schemas"]["ReportResult"];
        };
        /** @description The calling key, its role, features, limits and usage. */
        KeyInfo: {
            /** @description Always `true` (an invalid key gets 401). */
            valid: boolean;
            role: components["schemas"]["Role"];
            /** @description Features of the role. */
            permissions: {
                /** @description `GET /check` (every role). */
                check: boolean;
                /** @description `POST /report` (every role). */
                report: boolean;
                /** @description `POST /bulk-check` (Professional and up). */
                bulk_check: boolean;
                /** @description `POST /bulk-report` (Enterprise and Honeypot). */
                bulk_report: boolean;
                /** @description `GET /reports/{ip}` (Professional and up). */
                reports_detail: boolean;
                /** @description `GET /trends` (Professional and up). */
                trends: boolean;
            };
            /** @description Daily quotas of the key; Business quotas are already multiplied by the licence count. */
            rateLimits: {
                /** @description Daily check quota; `-1` for unlimited. */
                checksPerDay: number;
                /** @description Daily report quota; `-1` for unlimited. */
                reportsPerDay: number;
            };
            /** @description Usage of the quotas in the current UTC day. */
            usage: {
                /** @description Units charged to the check quota today. */
                checksToday: number;
                /** @description Units charged to the report quota today. */
                reportsToday: number;
            };
            /** @description The name the key was given when it was created (empty when none): a label of at most 100 printable characters on one line, without control or bidirectional formatting characters and without `<` or `>` (a name given before these were refused is shown without them). Escape it like any text where you show it. */
            keyName: string;
            /**
             * @description The role in the form the ReportedIP WordPress plugins map to a tier (`reportedip_` and the role identifier).
             * @enum {string}
             */
            userRole: "reportedip_free" | "reportedip_contributor" | "reportedip_professional" | "reportedip_business" | "reportedip_enterprise" | "reportedip_honeypot";
            /** @description `true` for a Honeypot key. */
            isHoneypotKey: boolean;
            /** @description Today's limits and usage in the form the ReportedIP clients read: `-1` is unlimited, `0` a counter the role does not have. */
            limits: {
                /** @description Daily check quota; the same value as `rateLimits.checksPerDay`. */
                dailyApiLimit: number;
                /** @description Checks left today; `-1` when unlimited. */
                remainingApiCalls: number;
                /** @description Daily report quota; the same value as `rateLimits.reportsPerDay`. */
                dailyReportLimit: number;
                /** @description Reports left today; `-1` when unlimited. */
                remainingReports: number;
                /** @description Reports charged today; the same value as `usage.reportsToday`. */
                dailyReportUsage: number;
                /**
                 * Format: date-time
                 * @description When the daily counters restart (00:00 UTC of the next day).
                 */
                resetTime: string;
            };
            /** @description The sites (host names) the key was used from today, from the `X-Rip-Site` header of any request and the `site_url` of relay sends and of `POST /notification-config`. A request from a new site beyond `limit` is refused with 403 `domain_limit_exceeded` (relay sends: 429 `site_daily_cap`), and `used` then counts one site more as tried (once a day, however many sites were refused). A key used on exactly `limit` sites is `ok`; it is `over_limit` only once a further site was refused, so that a client warns about a key shared beyond its plan and not about one that merely uses what its plan includes. */
            domains: {
                /** @description Distinct sites the key was used from today (UTC), plus one once a new site was refused today. It exceeds `limit` exactly when a site was refused. */
                used: number;
                /** @description Distinct sites allowed per day; `-1` for unlimited. */
                limit: number;
                /**
                 * @description `ok` while the key was used on at most `limit` sites today (reaching the limit included); `over_limit` once a further site was refused (`used` > `limit`). No site beyond `limit` is taken either way until the next UTC day.
                 * @enum {string}
                 */
                status: "ok" | "over_limit";
            };
            /** @description Features of the role, in the form the ReportedIP plugins show them. */
            features: {
                /** @description `GET /check`. */
                canCheck: boolean;
                /** @description `POST /report`. */
                canReport: boolean;
                /** @description `POST /bulk-check`. */
                canBulkCheck: boolean;
                /** @description Relayed mail and SMS carry the account's own sender name (Business and Enterprise). */
                hasWhiteLabel: boolean;
            };
        };
        /** @description Envelope of `GET /verify-key`. */
        KeyInfoEnvelope: {
            meta: components["schemas"]["Meta"];
            data: components["schemas"]["KeyInfo"];
        };
        /** @description Description of a generated blacklist. */
        BlacklistMeta: {
            /**
             * Format: date-time
             * @description Time the list snapshot was generated (regenerated every 15 minutes).
             */
            generatedAt: string;
            /** @description Minimum abuse confidence applied, as a decimal string (`"75"`). */
            confidence: string;
            /** @description The same value as `confidence`, under its earlier name. */
            confidenceMinimum: string;
            /** @description Number of entries in `data`. */
            count: number;
            /**
             * @description Label of the list format: `standard` for `GET /blacklist`, `detailed` for `GET /blacklist-detailed`, `combined` for `GET /blacklist-combined`.
             * @enum {string}
             */
            format: "standard" | "detailed" | "combined";
        };
        /** @description One listed address. */
        BlacklistEntry: {
            /**
             * Format: ip
             * @description The address, IPv4 or IPv6.
             */
            ip: string;
            /**
             * Format: ip
             * @description The same value as `ip`, under its earlier name.
             */
            ipAddress: string;
            /** @description Abuse confidence score, 0-100. */
            abuseConfidencePercentage: number;
            /**
             * Format: date-time
             * @description Time of the last report.
             */
            lastReportedAt: string;
        };
        /** @description The blacklist in JSON form. Entries are ordered by `abuseConfidencePercentage`, highest first, then by `lastReportedAt`, newest first. */
        BlacklistList: {
            meta: components["schemas"]["BlacklistMeta"];
            data: components["schemas"]["BlacklistEntry"][];
        };
        /** @description An address that left the list. */
        BlacklistRemovedEntry: {
            /**
             * Format: ip
             * @description The address, IPv4 or IPv6.
             */
            ip: string;
            /**
             * Format: ip
             * @description The same value as `ip`, under its earlier name.
             */
            ipAddress: string;
        };
        /** @description What changed in the list since the snapshot named by `since`: the entries added (as the JSON form lists them) and the addresses removed. An address whose score changed but that stays listed is in neither. */
        BlacklistDelta: {
            /** @description Description of the delta. */
            meta: {
                /**
                 * Format: date-time
                 * @description Time the current snapshot was generated.
                 */
                generatedAt: string;
                /** @description The `ETag` the delta starts from, as sent. */
                since: string;
                /** @description Minimum abuse confidence applied, as a decimal string. */
                confidence: string;
                /** @description The same value as `confidence`, under its earlier name. */
                confidenceMinimum: string;
                /** @description Number of entries in `data.added`. */
                added: number;
                /** @description Number of entries in `data.removed`. */
                removed: number;
                /**
                 * @description Always `delta`.
                 * @constant
                 */
                format: "delta";
            };
            /** @description The changes. */
            data: {
                /** @description Entries now on the list that were not on it. */
                added: components["schemas"]["BlacklistEntry"][];
                /** @description Addresses on the earlier list that are not on it any more. */
                removed: components["schemas"]["BlacklistRemovedEntry"][];
            };
        };
        /** @description The blacklist as text, each line ending with a line feed. `txt`: one address per line, in the order of the JSON form (with `aggregate=true`, addresses and CIDR blocks in address order). `cidr`: one CIDR block per line (`/32` and `/128` for single addresses). `nftables`, `ipset`, `iptables`, `ip6tables`, `nginx`: a file for that tool, starting with `#` comment lines that say how to load it (see the examples). With `since`, the text forms carry only the changes: `txt` and `cidr` lines start with `-` (removed) or `+` (added), removals first; `nftables`, `ipset`, `iptables` and `ip6tables` files delete and add elements or rules of the table, sets or chain their full form made. An empty list is a file with no entries. */
        BlacklistText: string;
        /** @description The blacklist as CSV (RFC 4180 quoting, lines ending with a line feed). The first line is the header `ip,abuseConfidencePercentage,lastReportedAt,totalReports,categories`; then one line per address in the order of the JSON form, with the category ids joined by `|`. A delta (`since`) has a first column `change`, `removed` or `added` (removals first), the removed lines carrying the values the address had. */
        BlacklistCsv: string;
        /** @description The operator's latest decision on a delisting request covering the address: `approved` (the address is whitelisted until `whitelistUntil` and off the list) or `rejected`. */
        DelistingDecision: {
            /**
             * @description The decision.
             * @enum {string}
             */
            status: "approved" | "rejected";
            /** @description The address or range the request named, in CIDR notation. */
            range: string;
            /**
             * Format: date-time
             * @description When the operator decided.
             */
            decidedAt: string;
            /**
             * Format: date-time
             * @description Approved only, until when the address is whitelisted.
             */
            whitelistUntil: string | null;
        };
        /** @description One page of the reports about an address, newest first. */
        ReportPage: {
            /**
             * Format: ip
             * @description The address.
             */
            ip: string;
            /** @description The reports on this page; empty beyond the last page. */
            reports: components["schemas"]["ReportDetail"][];
            /** @description Number of stored reports about the address (aggregated submissions are counted once, in their report). */
            total: number;
            /** @description This page number. */
            page: number;
            /** @description Page size used. */
            per_page: number;
            /** @description Number of pages, `ceil(total / per_page)`; 0 when there are no reports. */
            total_pages: number;
            /** @description Present when the operator decided a delisting request covering the address (`POST /delist-requests`): the latest decision, so that its reporters see why it left the list (or that it was kept). */
            delisting?: components["schemas"]["DelistingDecision"];
        };
        /** @description Envelope of `GET /reports/{ip}`. */
        ReportPageEnvelope: {
            meta: components["schemas"]["Meta"];
            data: components["schemas"]["ReportPage"];
        };
        /** @description One of the caller's reports with its evidence as stored. */
        ReportEvidence: {
            /** @description Report id (the `reportId` of `POST /report`). */
            id: number;
            categories: components["schemas"]["CategoryIds"];
            /**
             * Format: date-time
             * @description Time of the first submission of this report.
             */
            reportedAt: string;
            /** @description Further submissions merged into this report (their evidence joined to it while it fits 16 KiB). */
            aggregationCount: number;
            /** @description The evidence, redacted as it was stored (secrets replaced with markers such as `[redacted:email]`). */
            evidence: string;
        };
        /** @description One page of the caller's reports about an address that carry evidence, newest first. */
        ReportEvidencePage: {
            /**
             * Format: ip
             * @description The address.
             */
            ip: string;
            /** @description The reports on this page; empty beyond the last page. */
            reports: components["schemas"]["ReportEvidence"][];
            /** @description Number of the caller's reports about the address that carry evidence. */
            total: number;
            /** @description This page number. */
            page: number;
            /** @description Page size used. */
            per_page: number;
            /** @description Number of pages, `ceil(total / per_page)`; 0 when there are none. */
            total_pages: number;
        };
        /** @description Envelope of `GET /reports/{ip}/evidence`. */
        ReportEvidencePageEnvelope: {
            meta: components["schemas"]["Meta"];
            data: components["schemas"]["ReportEvidencePage"];
        };
        /** @description Activity in one time bucket. */
        TrendPoint: {
            /** @description Start of the bucket: for `24h` the hour as a UTC timestamp (`2026-11-20T13:00:00Z`), for `7d` and `30d` the UTC day (`2026-11-20`). */
            date: string;
            /** @description Report submissions received in the bucket. */
            reports: number;
            /** @description Addresses reported for the first time in the bucket. */
            newIPs: number;
        };
        /** @description Report activity over a period. */
        Trends: {
            /**
             * @description The period requested.
             * @enum {string}
             */
            period: "24h" | "7d" | "30d";
            /** @description Oldest bucket first, ending with the current (partial) one: 24 hourly buckets for `24h`, 7 or 30 daily buckets for `7d` and `30d`. */
            timeSeries: components["schemas"]["TrendPoint"][];
            /** @description The 5 threat categories with the most report submissions in the period, highest first. */
            topCategories: components["schemas"]["CategoryCount"][];
        };
        /** @description Envelope of `GET /trends`. */
        TrendsEnvelope: {
            meta: components["schemas"]["Meta"];
            data: components["schemas"]["Trends"];
        };
        /** @description Addresses to check. */
        BulkCheckRequest: {
            /** @description 1 to 1,000 IPv4 or IPv6 addresses. Entries that are not addresses are listed in `data.invalid` instead of failing the request; an address listed more than once is checked and charged once. */
            ips: string[];
        };
        /** @description Reputation of one address in a bulk check. An address without reports has 0, 0, `null`, `[]`. */
        BulkCheckItem: {
            /**
             * Format: ip
             * @description The address as sent.
             */
            ip: string;
            /** @description Abuse confidence score, 0-100. */
            abuseConfidencePercentage: number;
            /** @description Number of report submissions about the address. */
            totalReports: number;
            /**
             * Format: date-time
             * @description Time of the last report; `null` when there are none.
             */
            lastReportedAt: string | null;
            categories: components["schemas"]["CategoryIds"];
        };
        /** @description An entry of `ips` that is not an IP address. It is not checked and not charged. */
        BulkCheckInvalid: {
            /** @description The entry as sent. */
            ip: string;
            /** @description Why the entry was refused. */
            error: string;
        };
        /** @description Result of a bulk check. */
        BulkCheckResult: {
            /** @description One item per distinct valid address, in the order of the request. */
            results: components["schemas"]["BulkCheckItem"][];
            /** @description Number of addresses checked; the amount charged to the check quota. */
            checked: number;
            /** @description Entries that are not IP addresses, in the order of the request; empty when all are valid. */
            invalid: components["schemas"]["BulkCheckInvalid"][];
        };
        /** @description Envelope of `POST /bulk-check`. */
        BulkCheckEnvelope: {
            meta: components["schemas"]["Meta"];
            data: components["schemas"]["BulkCheckResult"];
        };
        /** @description Reports as CSV text. */
        BulkReportRequest: {
            /** @description One report per line, lines separated by line feeds (a carriage return before the line feed is ignored). Columns in order: IP, Categories, Comment, Evidence. Several category ids in the Categories column are joined with `|`; the Comment and Evidence columns are optional. Evidence is private, redacted and bounded as the `evidence` of `POST /report` (line feeds in it are written `\n`, as the CSV has one report per line); a line whose evidence is larger than 16,384 bytes is refused. Fields follow RFC 4180 quoting, so a comment containing commas or quotes is enclosed in double quotes. A first line starting with `IP` is a header and is skipped, as are empty lines. At most 10,000 lines and 2 MiB (2,097,152 bytes); larger bodies are refused with 413. */
            csv: string;
        };
        /** @description A CSV line that was not stored. */
        BulkReportError: {
            /** @description Line number in `csv`, counting from 1 (header and empty lines included). */
            line: number;
            /** @description The line as sent. */
            input: string;
            /** @description Why the line was refused. */
            error: string;
        };
        /** @description Outcome of a bulk report. */
        BulkReportResult: {
            /** @description Lines stored as reports. */
            success_count: number;
            /** @description Lines refused; the length of `errors`. */
            error_count: number;
            /** @description The refused lines in order; empty when all were stored. */
            errors: components["schemas"]["BulkReportError"][];
            /** @description Stored lines with something left out: category ids not in the catalogue, or a comment shortened to 1,024 characters. Empty when there were none. */
            warnings: {
                /** @description Line number in the CSV (1 is the first line). */
                line: number;
                /** @description What was left out. */
                message: string;
            }[];
            /** @description Present when some stored line carried evidence: what was removed from the evidence of all the stored lines together, by kind. */
            evidenceRedactions?: components["schemas"]["EvidenceRedactions"];
        };
        /** @description Envelope of `POST /bulk-report`. */
        BulkReportEnvelope: {
            meta: components["schemas"]["Meta"];
            data: components["schemas"]["BulkReportResult"];
        };
        /** @description Error body of the relay endpoints (they use no envelope). */
        RelayError: {
            /**
             * @description Always `false` on errors.
             * @constant
             */
            ok: false;
            /** @description Machine-readable error code; the values possible for each status are listed with the response. */
            code: string;
            /** @description The error explained for people. */
            message: string;
            /** @description On `invalid_request` caused by the request's form, one item per bad parameter or field. */
            errors?: components["schemas"]["FieldError"][];
        };
        /** @description Relay usage and allowance of one channel (mail or SMS) in the current monthly period. Periods are calendar months in UTC. */
        RelayQuotaBlock: {
            /** @description Messages of the period handed to the mail server or SMS provider, whatever a later delivery receipt says of them. */
            sent: number;
            /** @description Messages waiting for delivery or being handed on now. */
            queued: number;
            /** @description Messages accepted in the period, whatever their state. */
            queued_total: number;
            /** @description Messages of the period that could not be handed on (refused outright, or still failing when their retries were spent); their charge was given back. */
            failed: number;
            /** @description Monthly inclusive limit of the tier; `-1` for fair-use unlimited (Enterprise). */
            limit: number;
            /** @description The same value as `limit`. */
            inclusive_limit: number;
            /** @description Messages of the period charged to the inclusive quota. */
            inclusive_used: number;
            /** @description Inclusive messages left in the period, `max(0, inclusive_limit - inclusive_used)`; `-1` for unlimited. */
            inclusive_available: number;
            /** @description Prepaid bundle credits left; signed. A refund of an already consumed bundle can make it negative. Sends use it only once the inclusive quota is used up. */
            bundle_balance: number;
            /** @description Whether the tier can buy bundles (Professional and Business). */
            bundle_eligible: boolean;
            /**
             * Format: date-time
             * @description Start of the current monthly period (00:00 UTC on the first day of the month).
             */
            period_start: string;
            /**
             * Format: date-time
             * @description End of the current monthly period, exclusive (00:00 UTC on the first day of the next month).
             */
            period_end: string;
        };
        /** @description Relay allowance of the caller. */
        RelayQuota: {
            /**
             * @description The relay tier as a lower-case identifier, the form the ReportedIP plugins use as their tier id.
             * @enum {string}
             */
            tier: "professional" | "business" | "enterprise";
            /** @description Role identifier of the key (`professional`, `business` or `enterprise`). */
            role: components["schemas"]["Role"];
            mail: components["schemas"]["RelayQuotaBlock"];
            sms: components["schemas"]["RelayQuotaBlock"];
            /** @description The same value as `mail.bundle_balance`. */
            mail_bundle_balance: number;
            /** @description The same value as `sms.bundle_balance`. */
            sms_bundle_balance: number;
        };
        /** @description An additional mail header. */
        RelayMailHeader: {
            /** @description Header name; see `headers` for the names that are taken. */
            name: string;
            /** @description Header value, without line breaks. */
            value: string;
        };
        /** @description A transactional 2FA mail. `subject` and a recipient (`recipient`, or the earlier `to`) are required. When a field and its earlier name are both sent, the current field is used unless it is empty. */
        RelayMailRequest: {
            /** @description Exactly one recipient, plain (`user@example.com`) or in the RFC 5322 form `Display Name <user@example.com>`. A list, a group or a line break is refused with 422; throttles and the audit log use the address alone. */
            recipient?: string;
            /** @description Subject line, 1-255 characters. */
            subject: string;
            /**
             * @description HTML body, at most 100,000 characters.
             * @default
             */
            body_html: string;
            /**
             * @description Plain-text body, or the fallback of `body_html`; at most 100,000 characters.
             * @default
             */
            body_text: string;
            /** @description Reply-To address, plain (`support@example.com`) or in the RFC 5322 form `Display Name <support@example.com>`. Omitted: no Reply-To header. */
            reply_to?: string;
            /** @description Up to 10 additional mail headers, as an array of `{name, value}` or as an object `{"Name": "value"}` (an empty one may be sent as `[]`). Custom `X-...` headers are added as they are. Three others are taken into account, never copied: `Content-Type` (`text/plain` sends the plain-text body only, `text/html` the HTML body with the plain text as fallback; the relay always encodes in UTF-8), `From` (its display name becomes the sender name, unless a Business or Enterprise account set its own white-label sender name on the dashboard, which wins; the address is always the relay's own, so no sender can be forged) and `Reply-To` (like `reply_to`, which wins when both are sent). Headers of the envelope, the sender's identity and the mail's trace are refused with 422: `To`, `Cc`, `Bcc`, `Sender`, `Return-Path`, `Received`, `Received-SPF`, `DKIM-Signature`, `DomainKey-Signature`, `Authentication-Results`, `ARC-*` (seal, message signature, authentication results), `Message-ID`, `Delivered-To`, `Envelope-To`, `Original-Recipient`, `Disposition-Notification-To`, `Return-Receipt-To` and every `Resent-*` header, as is a line break or control character in a name or value. Any other header (`MIME-Version`, `Date`, `Content-Transfer-Encoding`, `Auto-Submitted`, `List-Unsubscribe`, `Precedence`, `Subject` …) is left out: the relay sets what a mail needs itself, the send is queued without it, and the answer names it in `ignored_headers`, so that a header a site's mail filter adds never stops a 2FA mail. */
            headers?: components["schemas"]["RelayMailHeader"][] | {
                [key: string]: string;
            };
            /**
             * Format: uri
             * @description URL of the site the mail is sent for (its host name at most 253 characters); used for the per-site daily cap and the audit log. Omitted: the caps apply to the key as a whole.
             */
            site_url?: string;
            /**
             * @deprecated
             * @description Earlier name of `recipient`.
             */
            to?: string;
            /**
             * @deprecated
             * @description Earlier name of `body_html`.
             */
            html_body?: string;
            /**
             * @deprecated
             * @description Earlier name of `body_text`.
             */
            plain_body?: string;
        } | unknown | unknown;
        /** @description A queued relay message. */
        RelaySendResult: {
            /**
             * @description Always `true` on success.
             * @constant
             */
            ok: true;
            /** @description Id of the queued message, for support requests and audit logs. */
            queue_id: number;
            /** @description The channel's quota block after this send. */
            remaining_quota: components["schemas"]["RelayQuotaBlock"];
            /** @description Mail only, and only when some were: the names (as sent) of the `headers` the relay left out of the mail because it does not copy them (see `headers` of the request). The mail was queued without them. */
            ignored_headers?: string[];
        };
        /** @description Variables of a server-side SMS template. */
        RelayTemplateVars: {
            /** @description The one-time code, 4-10 digits. */
            code: string;
            /** @description Minutes until the code expires, 1-60. */
            expiry_min: number;
            /**
             * @description Language of the rendered text, a two-letter code (a region such as `de_DE` is ignored). A language the template does not have falls back to English.
             * @default en
             */
            lang: string;
        };
        /** @description A 2FA SMS. A recipient (`recipient_phone`, or the earlier `to`) is required, and either `template_code` (with `template_vars`) or `message`; without both the request is refused with 422 `invalid_request`. When a field and its earlier name are both sent, the current field is used unless it is empty. */
        RelaySmsRequest: {
            /** @description Recipient phone number in E.164 form (`+` and 7 to 15 digits). */
            recipient_phone?: string;
            /** @description Server-side template. When set, the text is rendered on the server from `template_vars` in the requested language and `message` is ignored, so the code never appears in client logs. Built in: `2fa_code`, `2fa_login`, `login_code` and `password_reset_code`, in English, German, French and Spanish; an operator may add templates and languages. An unknown template is refused with 422 `unknown_template`. */
            template_code?: string;
            template_vars?: components["schemas"]["RelayTemplateVars"];
            /**
             * @description Raw text, at most 480 characters; used only when no `template_code` is given. Free text is off unless the operator allows it to the caller's tier (else 422 `template_required`), and never carries a link (422 `url_not_allowed`).
             * @default
             */
            message: string;
            /**
             * Format: uri
             * @description URL of the site the SMS is sent for (its host name at most 253 characters); used for the per-site daily cap and the audit log. Omitted: the caps apply to the key as a whole.
             */
            site_url?: string;
            /**
             * @deprecated
             * @description Earlier name of `recipient_phone`.
             */
            to?: string;
            /**
             * @deprecated
             * @description Earlier name of `template_vars`.
             */
            vars?: components["schemas"]["RelayTemplateVars"];
        } | unknown | unknown;
        /** @description One listed address, with its categories and country. */
        BlacklistDetailedEntry: {
            /**
             * Format: ip
             * @description The address, IPv4 or IPv6.
             */
            ip: string;
            /**
             * Format: ip
             * @description The same value as `ip`, under its earlier name.
             */
            ipAddress: string;
            /** @description Abuse confidence score, 0-100. */
            abuseConfidencePercentage: number;
            /**
             * Format: date-time
             * @description Time of the last report.
             */
            lastReportedAt: string;
            categories: components["schemas"]["CategoryIds"];
            countryCode: components["schemas"]["CountryCode"];
        };
        /** @description The blacklist in JSON form with categories and country per entry. Entries are ordered as in `GET /blacklist`. */
        BlacklistDetailedList: {
            meta: components["schemas"]["BlacklistMeta"];
            data: components["schemas"]["BlacklistDetailedEntry"][];
        };
        /** @description An address a site unblocked because it was a false positive. */
        WhitelistFeedbackRequest: {
            /**
             * Format: ip
             * @description The address, IPv4 or IPv6; it must be globally routable.
             */
            ipAddress: string;
            /** @description Why it was unblocked; kept up to 1,024 characters. */
            reason?: string;
        };
        /** @description The recorded feedback and the address's score with it. */
        WhitelistFeedbackResult: {
            /** @description Id of the feedback of your account about this address. */
            feedbackId: number;
            /**
             * Format: ip
             * @description The address in canonical form.
             */
            ip: string;
            /** @description Distinct accounts that gave positive feedback about the address. */
            positiveFeedbackCount: number;
            /** @description The address's score, with the feedback counted. */
            abuseConfidencePercentage: number;
            /** @description `true` when your account had given feedback about this address before (its reason is updated; it counts once). */
            duplicate: boolean;
        };
        /** @description Envelope of `POST /whitelist`. */
        WhitelistFeedbackEnvelope: {
            meta: components["schemas"]["Meta"];
            data: components["schemas"]["WhitelistFeedbackResult"];
        };
        /** @description The notification settings of one site of the key. */
        NotificationConfig: {
            /** @description The URL as last sent. */
            site_url: string;
            /** @description The site's host name (lower case, without `www.`), the key of the configuration. */
            site: string;
            /** @description The addresses, lower-cased, duplicates removed. */
            recipients: string[];
            /** @description Sender name. */
            from_name: string;
            /** @description Sender address, or empty. */
            from_email: string;
            /**
             * Format: date-time
             * @description When it was last saved.
             */
            updatedAt: string;
        };
        /** @description Envelope of the notification configuration. */
        NotificationConfigEnvelope: {
            meta: components["schemas"]["Meta"];
            data: components["schemas"]["NotificationConfig"];
        };
        /** @description Where notifications about a site should go. */
        NotificationConfigRequest: {
            /**
             * Format: uri
             * @description URL of the site; the configuration is kept per key and site (its host name, at most 253 characters). The site counts among the key's sites of the day as `X-Rip-Site` does.
             */
            site_url: string;
            /**
             * @description Up to 20 e-mail addresses, each exactly one mailbox.
             * @default []
             */
            recipients: string[];
            /**
             * @description Sender name of the notifications, one line.
             * @default
             */
            from_name: string;
            /**
             * @description Sender address of the notifications, or empty.
             * @default
             */
            from_email: string;
        };
        /** @description The server that makes the indicators. */
        StixIdentity: {
            /** @enum {string} */
            type: "identity";
            /** @enum {string} */
            spec_version: "2.1";
            id: string;
            /** Format: date-time */
            created: string;
            /** Format: date-time */
            modified: string;
            name: string;
            /** @enum {string} */
            identity_class: "system";
        };
        /** @description One listed address. */
        StixIndicator: {
            /** @enum {string} */
            type: "indicator";
            /** @enum {string} */
            spec_version: "2.1";
            /** @description `indicator--` and a UUID v5 of the server and the address: the same on every pull. */
            id: string;
            /** Format: date-time */
            created: string;
            /** Format: date-time */
            modified: string;
            created_by_ref: string;
            /** @description The address. */
            name: string;
            /** @description `[ipv4-addr:value = '…']` or `[ipv6-addr:value = '…']`. */
            pattern: string;
            /** @enum {string} */
            pattern_type: "stix";
            /** Format: date-time */
            valid_from: string;
            indicator_types: "malicious-activity"[];
            /** @description The address's abuse confidence score. */
            confidence: number;
            /** @description The names of the threat categories the address was reported with. */
            labels: string[];
        };
        /** @description A STIX 2.1 bundle: the server's `identity`, then one `indicator` per listed address. Validated in the tests against the OASIS STIX 2.1 JSON schemas. */
        StixBundle: {
            /** @enum {string} */
            type: "bundle";
            id: string;
            objects: (components["schemas"]["StixIdentity"] | components["schemas"]["StixIndicator"])[];
        };
        /** @description The organisation that made the feed (this server). */
        MispOrg: {
            name: string;
            /** Format: uuid */
            uuid: string;
        };
        MispTag: {
            /** @description A threat category as a machine tag: `trs:category="SSH"`. */
            name: string;
        };
        /** @description The feed's events by UUID, each with what MISP's feed manifest holds (the fields MISP's own feed generator writes). */
        MispManifest: {
            [key: string]: {
                info: string;
                /** Format: date */
                date: string;
                /** @description Unix seconds; MISP fetches the event again when it changes. */
                timestamp: string;
                /** @enum {integer} */
                analysis: 2;
                /** @enum {integer} */
                threat_level_id: 2;
                Orgc: components["schemas"]["MispOrg"];
                Tag: components["schemas"]["MispTag"][];
            };
        };
        /** @description One event of the feed, as MISP's feed format writes it. */
        MispEventFile: {
            Event: {
                /** Format: uuid */
                uuid: string;
                info: string;
                /** Format: date */
                date: string;
                timestamp: string;
                publish_timestamp: string;
                published: boolean;
                /** @enum {string} */
                analysis: "2";
                /** @enum {string} */
                threat_level_id: "2";
                Orgc: components["schemas"]["MispOrg"];
                Tag: components["schemas"]["MispTag"][];
                Attribute: {
                    /** Format: uuid */
                    uuid: string;
                    /** @enum {string} */
                    type: "ip-src";
                    /** @enum {string} */
                    category: "Network activity";
                    value: string;
                    to_ids: boolean;
                    /** @description The score, `score 87`. */
                    comment: string;
                    timestamp: string;
                    deleted: boolean;
                    disable_correlation: boolean;
                    Tag: components["schemas"]["MispTag"][];
                }[];
            };
        };
        /** @description A request to review an address (or range) for removal from the list. */
        DelistRequestInput: {
            /** @description The address, or a range in CIDR notation no wider than a `/24` (IPv4) or a `/48` (IPv6). Addresses that are never listed (private, reserved, documentation ranges) are refused with 422 `address_not_reportable`. */
            ip: string;
            /** @description Where the confirmation link and the decision are mailed. Never shown to anyone but the operator. */
            email: string;
            /** @description Why the address should come off the list. Seen by the operator only; never mailed. */
            reason: string;
        };
        /** @description Where a delisting request stands, as its requester sees it. */
        DelistRequestStatus: {
            /**
             * Format: uuid
             * @description The request's id.
             */
            id: string;
            /** @description The address, or the range in CIDR notation. */
            ip: string;
            /**
             * @description `unconfirmed` until the mailed link is opened (24 hours), then `open` until the operator decides: `approved` (whitelisted until `whitelistUntil`) or `rejected`; `expired` when never confirmed or replaced by a proven request.
             * @enum {string}
             */
            status: "unconfirmed" | "open" | "approved" | "rejected" | "expired";
            /** @description Whether the request was made from the address itself (the caller's address equals it, lies in the range, or in the same IPv6 /64). Proven requests are reviewed first. */
            proven: boolean;
            /**
             * Format: date-time
             * @description When the request was made.
             */
            createdAt: string;
            /**
             * Format: date-time
             * @description When its link was opened.
             */
            confirmedAt: string | null;
            /**
             * Format: date-time
             * @description When the operator decided.
             */
            decidedAt: string | null;
            /**
             * Format: date-time
             * @description Approved requests only, until when the address is whitelisted.
             */
            whitelistUntil: string | null;
            /** @description The status (and, when just made, whether the request was proven) as a sentence. */
            message: string;
        };
        /** @description Envelope of `POST /delist-requests` and `GET /delist-requests/{id}`. */
        DelistRequestEnvelope: {
            meta: components["schemas"]["Meta"];
            data: components["schemas"]["DelistRequestStatus"];
        };
        /**
         * @description An event a subscription may ask for. `address.listed`, `address.delisted` and `address.score_changed` are sent in one batch per endpoint after each blacklist regeneration; `report.received` when a report of the subscribing account is stored.
         * @enum {string}
         */
        WebhookEvent: "address.listed" | "address.delisted" | "address.score_changed" | "report.received";
        /** @description A webhook subscription (its secret is shown only once, when it is made). */
        Webhook: {
            /** Format: uuid */
            id: string;
            url: string;
            events: components["schemas"]["WebhookEvent"][];
            confidence: number;
            categories: number[];
            /** Format: date-time */
            createdAt: string;
            /**
             * Format: date-time
             * @description Set when deliveries failed for 24 hours; nothing is sent to a disabled endpoint.
             */
            disabledAt: string | null;
            /**
             * Format: date-time
             * @description The first failed delivery since the last success, if deliveries are failing.
             */
            failingSince: string | null;
        };
        /** @description Envelope of the account's subscriptions. */
        WebhookListEnvelope: {
            meta: components["schemas"]["Meta"];
            data: components["schemas"]["Webhook"][];
        };
        /** @description A subscription to the service's events, delivered by HTTPS POST to `url`. */
        WebhookInput: {
            /**
             * Format: uri
             * @description Where events are POSTed: an `https://` URL whose host resolves only to public addresses (private, loopback, link-local, CGNAT, metadata, multicast and reserved addresses are refused with 400 on `url`). `http://` is accepted only for hosts in the operator's WEBHOOK_ALLOW_RANGES.
             */
            url: string;
            events: components["schemas"]["WebhookEvent"][];
            /**
             * @description Address events are sent for addresses scoring at least this (as `confidence` of `GET /blacklist`).
             * @default 75
             */
            confidence: number;
            /** @description When given, address events only for addresses reported in one of these categories. */
            categories?: number[];
        };
        /** @description The subscription made, with its signing secret (shown this once only). */
        WebhookCreated: {
            /** Format: uuid */
            id: string;
            url: string;
            events: components["schemas"]["WebhookEvent"][];
            confidence: number;
            categories: number[];
            /** Format: date-time */
            createdAt: string;
            /**
             * Format: date-time
             * @description Set when deliveries failed for 24 hours; nothing is sent to a disabled endpoint.
             */
            disabledAt: string | null;
            /**
             * Format: date-time
             * @description The first failed delivery since the last success, if deliveries are failing.
             */
            failingSince: string | null;
            /** @description The signing secret (Standard Webhooks): `whsec_` and the base64 of 24 random bytes. Each delivery carries `webhook-signature: v1,<base64 HMAC-SHA256>` of `<webhook-id>.<webhook-timestamp>.<body>` keyed with the decoded bytes. */
            secret: string;
        };
        /** @description Envelope of a new subscription. */
        WebhookCreatedEnvelope: {
            meta: components["schemas"]["Meta"];
            data: components["schemas"]["WebhookCreated"];
        };
        /** @description The outcome of one delivery attempt. */
        WebhookDelivery: {
            /** @description The delivery's `webhook-id` (the same on every retry). */
            id: string;
            type: string;
            /** @description Whether the endpoint answered 2xx. */
            delivered: boolean;
            attempts: number;
            /** @description The endpoint's HTTP status; null when no answer came. */
            status: number | null;
            /** @description Why the attempt failed (refused address, timeout, redirect, status). */
            error: string | null;
        };
        /** @description Envelope of a delivery result. */
        WebhookDeliveryEnvelope: {
            meta: components["schemas"]["Meta"];
            data: components["schemas"]["WebhookDelivery"];
        };
        /** @description A rule set signed by the operator. `payload` is a JSON text `{"key": "<rule set>", "version": <integer>, "rules": [...]}`; `signature` is the Ed25519 signature of exactly the UTF-8 bytes of `payload`, in standard base64. A client verifies the signature against the operator's public key before it parses the payload. At most 512 KiB of payload. */
        SignedRuleset: {
            /** @description The rule set as JSON text, exactly the bytes that were signed. */
            payload: string;
            /** @description Ed25519 signature (64 bytes) of `payload`, standard base64. */
            signature: string;
        };
    };
    responses: {
        /** @description Server error, in the envelope: 500 unexpected error, 501 not implemented yet, 503 database unavailable (retry later). */
        ServerError: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorEnvelope"];
            };
        };
        /** @description The request does not match this document: an unknown or malformed query parameter, a value out of range. `meta.errors` names each problem. */
        BadRequest: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorEnvelope"];
            };
        };
        /** @description The API key is missing (on an operation that needs one), unknown or revoked. A key that is sent is checked even on public operations. */
        Unauthorized: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorEnvelope"];
            };
        };
        /** @description `domain_limit_exceeded`: the request names a site (`X-Rip-Site`, or the `site_url` of `POST /notification-config`) the key has not been used from today, and the key has already been used from as many sites today as its role allows (see `domains` in `GET /verify-key`). Nothing was charged. An `X-Rip-Site` that is not an http(s) URL, or whose host name is longer than 253 characters, names no site. */
        DomainLimitExceeded: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorEnvelope"];
            };
        };
        /** @description The daily limit of the counter is used up, or a bulk request would exceed what is left (nothing is charged then), or the caller's budget of server errors for the day is used up. Wait `Retry-After` seconds, until the counters restart at 00:00 UTC. */
        TooManyRequests: {
            headers: {
                "Retry-After": components["headers"]["Retry-After"];
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["RateLimitedEnvelope"];
            };
        };
        /** @description Too many of this key's (or this address's) requests met a server error today: past that budget the server refuses the caller until 00:00 UTC, so that server errors cannot be used as free probes. Wait `Retry-After` seconds and report the problem to the operator. */
        FaultBudgetExceeded: {
            headers: {
                "Retry-After": components["headers"]["Retry-After"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["RateLimitedEnvelope"];
            };
        };
        /** @description The network is well formed but refused: wider than /16 (IPv4) or /48 (IPv6) (`network_too_large`). */
        CheckBlockUnprocessableEntity: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorEnvelope"];
            };
        };
        /** @description The request does not match this document: malformed JSON, a missing, unknown or invalid field, an unknown or malformed query parameter. `meta.errors` names each problem. */
        BadRequestBody: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorEnvelope"];
            };
        };
        /** @description The request body is larger than 3 MiB, or than 64 KiB in a request without a valid key (the key is checked before the body is read), or the `csv` of `POST /bulk-report` has more than 10,000 lines or 2 MiB, or the `evidence` of `POST /report` is larger than 16,384 bytes of UTF-8 (the error names the field). */
        PayloadTooLarge: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorEnvelope"];
            };
        };
        /** @description The request body is sent neither as `application/json` nor as `application/x-www-form-urlencoded`. */
        UnsupportedMediaType: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorEnvelope"];
            };
        };
        /** @description The request is well formed but refused for good, with `meta.errors` naming the field and `code` saying why: `address_not_reportable` (the address is not globally routable: private, loopback, link-local, multicast, reserved or documentation range) or `unknown_category` (no id of the list is in the catalogue). Nothing is stored or charged. Sending the same report again gives the same answer. */
        ReportUnprocessableEntity: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorEnvelope"];
            };
        };
        /** @description The list is unchanged since the `ETag` sent in `If-None-Match`. No body; keep using your copy. */
        NotModified: {
            headers: {
                ETag: components["headers"]["ETag"];
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content?: never;
        };
        /** @description `tier_forbidden`: the role of the key does not include this feature. `domain_limit_exceeded`: the request names a site (`X-Rip-Site`, or the `site_url` of `POST /notification-config`) the key has not been used from today, and the key has already been used from as many sites today as its role allows (see `domains` in `GET /verify-key`). */
        Forbidden: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorEnvelope"];
            };
        };
        /** @description The list named by `since` is no longer kept (or never existed for these parameters): fetch the whole list again, without `since`. */
        Gone: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorEnvelope"];
            };
        };
        /** @description The request is well formed but refused: `category` names a threat-category id that does not exist (`unknown_category`), or a parameter is not taken by the format (`invalid_combination`: `aggregate` with `json` or `csv`, `since` with `nginx`). */
        BlacklistFormatUnprocessableEntity: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorEnvelope"];
            };
        };
        /** @description The request is well formed but refused: `category` names a threat-category id that is not in the catalogue this server has enabled (`GET /categories`); code `unknown_category`. */
        CategoryFilterUnprocessableEntity: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorEnvelope"];
            };
        };
        /** @description Server error, without envelope: 500 `internal_error`, 501 `not_implemented`, 503 `service_unavailable` (the database is unavailable; retry later). */
        RelayServerError: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["RelayError"] & {
                    /** @enum {string} */
                    code: "internal_error" | "not_implemented" | "service_unavailable";
                };
            };
        };
        /** @description The request does not match this document (`invalid_request`): malformed JSON, a missing, unknown or invalid field, an unknown or malformed query parameter. `errors` names each problem. */
        RelayBadRequest: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["RelayError"] & {
                    /** @enum {string} */
                    code: "invalid_request";
                };
            };
        };
        /** @description `missing_api_key`: no key was sent. `invalid_api_key`: the key is malformed, unknown or deactivated. */
        RelayUnauthorized: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["RelayError"] & {
                    /** @enum {string} */
                    code: "missing_api_key" | "invalid_api_key";
                };
            };
        };
        /** @description `tier_forbidden`: the relay is not available to the Free and Contributor tiers (nor to Honeypot keys). */
        RelayForbidden: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["RelayError"] & {
                    /** @enum {string} */
                    code: "tier_forbidden";
                };
            };
        };
        /** @description Anti-fraud throttle; nothing was sent or charged. `recipient_backoff`: too many messages from this account to this recipient recently (after 3 in 24 hours each further one waits a doubling backoff), or, for an account that has already sent this recipient its 3, too many to this recipient from all accounts together (200 in 24 hours by default, against SMS pumping). An account's first 3 messages to a recipient in 24 hours are never refused for what other accounts sent. `site_daily_cap`: the account's daily cap for the site of `site_url` (its host name; or for the account, without `site_url`) is reached, or this key has already been used for as many different sites today as its role allows. `fault_budget_exceeded`: too many of the caller's requests met a server error today. Wait `Retry-After` seconds. */
        RelayTooManyRequests: {
            headers: {
                "Retry-After": components["headers"]["Retry-After"];
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["RelayError"] & {
                    /** @enum {string} */
                    code: "recipient_backoff" | "site_daily_cap" | "fault_budget_exceeded";
                };
            };
        };
        /** @description `cap_reached_buy_bundle`: the inclusive monthly quota of the channel is used up and its bundle balance is zero or negative; buy a bundle. `monthly_cap_reached`: the monthly cap is reached on a tier that cannot use bundles (the Enterprise fair-use limit). `Retry-After` holds the seconds until the next monthly period starts, when the inclusive quota is full again. */
        RelayPaymentRequired: {
            headers: {
                "Retry-After": components["headers"]["Retry-After"];
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["RelayError"] & {
                    /** @enum {string} */
                    code: "cap_reached_buy_bundle" | "monthly_cap_reached";
                };
            };
        };
        /** @description `payload_too_large`: the request body is larger than 3 MiB, or than 64 KiB in a request without a valid key (the key is checked before the body is read). */
        RelayPayloadTooLarge: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["RelayError"] & {
                    /** @enum {string} */
                    code: "payload_too_large";
                };
            };
        };
        /** @description `unsupported_media_type`: the request body is not sent as `application/json`. */
        RelayUnsupportedMediaType: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["RelayError"] & {
                    /** @enum {string} */
                    code: "unsupported_media_type";
                };
            };
        };
        /** @description `invalid_request`: the request is well formed but cannot be sent: neither `body_html` nor `body_text` (nor their earlier names) has content, or a value breaks a rule the relay checks itself: `recipient` and `reply_to` must each be exactly one mailbox, and no value that ends up in a header (recipient, subject, reply-to, header names and values, site URL) may hold a line break or control character. */
        RelayMailUnprocessableEntity: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["RelayError"] & {
                    /** @enum {string} */
                    code: "invalid_request";
                };
            };
        };
        /** @description `country_not_supported`: SMS to the destination country are unavailable for cost or operational reasons. `number_type_not_supported`: the number cannot receive a 2FA SMS; only mobile numbers (and numbers that may be mobile) are taken, never premium-rate, shared-cost, toll-free, UAN, personal, pager or voicemail numbers. `template_required`: free text (`message`) is off on this relay (the default) or allowed only to some tiers; use `template_code`. `url_not_allowed`: the free text holds a link (a `scheme://` URL, a `www.` name, or a host name or IPv4 address followed by a path). `unknown_template`: no template of that name. `invalid_request`: neither `template_code` nor `message` is given, `template_code` is given without `template_vars`, or a value breaks a rule the relay checks itself (a line break in a value, an over-long site name). */
        RelaySmsUnprocessableEntity: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["RelayError"] & {
                    /** @enum {string} */
                    code: "country_not_supported" | "number_type_not_supported" | "template_required" | "url_not_allowed" | "unknown_template" | "invalid_request";
                };
            };
        };
        /** @description The list is unchanged since the `ETag` sent in `If-None-Match`. No body; keep using your copy. */
        NotModifiedDeprecated: {
            headers: {
                ETag: components["headers"]["ETag"];
                Deprecation: components["headers"]["Deprecation"];
                Sunset: components["headers"]["Sunset"];
                Link: components["headers"]["Link"];
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content?: never;
        };
        /** @description `address_not_reportable`: the address is not globally routable. Nothing is stored or charged. */
        FeedbackUnprocessableEntity: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorEnvelope"];
            };
        };
        /** @description The current list holds no event with this UUID (its addresses were reported again or left the list); MISP drops it at its next pull of the manifest. */
        MispEventNotFound: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorEnvelope"];
            };
        };
        /** @description Well formed but refused, with `code` saying why: `address_not_reportable` (the address is never listed: private, loopback, link-local, multicast, reserved or documentation range) or `delist_request_open` (a request for the same address is already waiting for confirmation or review). Nothing is stored or mailed. */
        DelistUnprocessableEntity: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorEnvelope"];
            };
        };
        /** @description Refused for a time, after `Retry-After` seconds: the caller's daily allowance is used up (`rate_limited`), its address (or IPv6 /64) made DELIST_REQUESTS_PER_SOURCE_DAILY requests in 24 hours (`delist_requests_exhausted`), or a request for the same address was rejected less than 7 days ago (`delist_recently_rejected`). */
        DelistTooManyRequests: {
            headers: {
                "Retry-After": components["headers"]["Retry-After"];
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["RateLimitedEnvelope"] | components["schemas"]["ErrorEnvelope"];
            };
        };
        /** @description No request has this id, or the token is not its token (the two are not told apart). */
        DelistNotFound: {
            headers: {
                "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                RateLimit: components["headers"]["RateLimit"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorEnvelope"];
            };
        };
        /** @description Well formed but refused: `webhook_limit_reached`, the account holds 10 subscriptions already. Nothing is stored. */
        WebhookUnprocessableEntity: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorEnvelope"];
            };
        };
        /** @description No subscription of the key's account has this id. */
        WebhookNotFound: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["ErrorEnvelope"];
            };
        };
    };
    parameters: {
        /**
         * @description The IPv4 or IPv6 address to look up. The schema uses the custom format `ip`: a dotted-quad IPv4 address or an IPv6 address in any RFC 4291 text form, without prefix length or zone.
         * @example 203.0.113.7
         */
        IpQuery: string;
        /**
         * @description An IPv4 network from /16 to /32 or an IPv6 network from /48 to /128, in CIDR notation (`198.51.100.0/24`, `2001:db8:85a3::/48`). Host bits may be set: the network they belong to is checked.
         * @example 203.0.113.0/24
         */
        NetworkQuery: string;
        /**
         * @description At most this many reported addresses are returned, the highest scores first. Each address returned costs one check: lower it to bound the charge.
         * @example 100
         */
        CheckBlockLimit: number;
        /**
         * @description The AS number, without `AS` (`64500` is refused: special-purpose numbers (0, AS_TRANS 23456, documentation, private use and reserved) name no network and answer 400).
         * @example 208091
         */
        AsnQuery: number;
        /**
         * @description At most this many reported addresses are returned, the highest scores first. Each address returned costs one check: lower it to bound the charge. The summary covers them all.
         * @example 25
         */
        CheckAsnLimit: number;
        /**
         * @description Only addresses reported within this many days count (and are returned); without it, every retained report counts.
         * @example 30
         */
        MaxAgeInDays: number;
        /**
         * @description Output format: `json` (the list with its `meta`), `txt` (plain text, one address per line), `csv` (a header line, then one line per address), or a form a firewall loads as it is: `cidr` (one CIDR block per line), `nftables` (an `nft -f` file replacing `table inet trs`), `ipset` (an `ipset restore` file filling the sets `trs-v4` and `trs-v6`), `iptables` and `ip6tables` (an `iptables-restore --noflush` file for the chain `trs-blacklist`, IPv4 and IPv6 entries respectively), `nginx` (a `geo $trs_blacklist` block to include in `http {}`), or `rbldnsd` (a DNS blocklist: a `combined` data file that rbldnsd serves, listed addresses answering `127.0.0.2` with a TXT of their score and categories).
         * @example json
         */
        BlacklistFormat: "json" | "txt" | "csv" | "cidr" | "nftables" | "ipset" | "iptables" | "ip6tables" | "nginx" | "rbldnsd";
        /**
         * @description Source list. `dynamic` is the community-driven, automatically scored list; `community` is its earlier name and returns the same list. Other values are reserved.
         * @example dynamic
         */
        BlacklistSource: "dynamic" | "community";
        /**
         * @description Minimum abuse confidence score of the listed addresses, 0-100. Use 90 for automated blocking. Aliases: `confidenceMinimum`, `confidence_minimum`; when an alias is sent it takes precedence over `confidence`.
         * @example 90
         */
        BlacklistConfidence: number;
        /**
         * @description Alias of `confidence`, 0-100 (default 75). When sent, it takes precedence over `confidence`.
         * @example 90
         */
        BlacklistConfidenceMinimum: number;
        /**
         * @deprecated
         * @description Earlier alias of `confidence`, 0-100 (default 75). When sent, it takes precedence over `confidence` and `confidenceMinimum`.
         * @example 90
         */
        BlacklistConfidenceMinimumLegacy: number;
        /**
         * @description Only addresses reported with at least one of these threat-category ids, separated by commas (for example `18,22` for SSH and brute-force). Combine with `confidence` to build service-specific lists; `GET /blacklist-categories` gives ready-made groups. Unknown ids are refused with 422. Omitted: all categories.
         * @example 18,22
         */
        BlacklistCategory: string;
        /**
         * @description Maximum number of entries, 1-1,000,000. The list is cut after this many entries, keeping the highest scores.
         * @example 10000
         */
        BlacklistLimit: number;
        /**
         * @description `true`: the listed addresses are merged into the smallest set of CIDR blocks that covers exactly them and nothing else. Addresses merge only when together they fill a whole aligned block: `198.51.100.4` and `198.51.100.5` become `198.51.100.4/31`, all 256 addresses of `198.51.100.0`-`198.51.100.255` become `198.51.100.0/24`, while `198.51.100.5` and `198.51.100.6` stay apart (they fill no aligned block). No unlisted address is ever blocked. Taken by the formats `txt`, `cidr`, `nftables`, `ipset`, `iptables`, `ip6tables` and `nginx`; `json` and `csv`, which carry each address's score, refuse it with 422.
         * @example false
         */
        BlacklistAggregate: boolean;
        /**
         * @description The `ETag` of a list you hold, fetched with the same other parameters: the answer is then only what was added to and removed from that list since (a delta), with the current list's `ETag`, to send as `since` next time. The server keeps the snapshots of the last few regenerations (8 by default, two hours at the default interval); an older or unknown tag answers `410 Gone`, and the whole list must be fetched again. `nginx` has no delta form (422).
         * @example "bl-9f86d081884c7d65"
         */
        BlacklistSince: string;
        /**
         * @description The `ETag` of a list or rule set you already hold. When it is unchanged (for the same query parameters), the response is `304 Not Modified` without a body.
         * @example "bl-9f86d081884c7d65"
         */
        IfNoneMatch: string;
        /**
         * @description The IPv4 or IPv6 address. The schema uses the custom format `ip`: a dotted-quad IPv4 address or an IPv6 address in any RFC 4291 text form, without prefix length or zone.
         * @example 203.0.113.7
         */
        IpPath: string;
        /**
         * @description The subscription's id, from `POST /webhooks` or `GET /webhooks`.
         * @example 5f0c6a2e-3b8d-4c1f-9e2a-7d4b1c0e9f11
         */
        WebhookId: string;
    };
    requestBodies: never;
    headers: {
        /**
         * @description Daily limit of the counter this response describes: the counter the operation charges, otherwise the caller's main daily limit (the check quota with a key, the per-IP public limit without one). `-1` means unlimited.
         * @example 1000
         */
        "X-RateLimit-Limit": number;
        /**
         * @description Requests left on that counter in the current UTC day, after this request was counted. `-1` means unlimited.
         * @example 999
         */
        "X-RateLimit-Remaining": number;
        /**
         * @description Time at which the daily counters restart, as UTC epoch seconds (the next 00:00 UTC).
         * @example 1795219200
         */
        "X-RateLimit-Reset": number;
        /**
         * @description The same limit as `X-RateLimit-Limit`, in the form of the IETF draft "RateLimit header fields for HTTP": policy name `daily`, quota `q` and window `w` in seconds. Left out when the limit is unlimited, which the draft cannot express.
         * @example "daily";q=1000;w=86400
         */
        "RateLimit-Policy": string;
        /**
         * @description The state of that limit in the form of the IETF draft "RateLimit header fields for HTTP": policy name `daily`, remaining requests `r` and seconds `t` until the counters restart. Left out when the limit is unlimited.
         * @example "daily";r=999;t=34075
         */
        RateLimit: string;
        /**
         * @description Seconds to wait before sending the request again. Always a whole number of seconds, never an HTTP date.
         * @example 34075
         */
        "Retry-After": number;
        /**
         * @description Strong entity tag of the list as generated for these query parameters (or of the rule set). It changes when the content changes (a list is regenerated every 15 minutes). Send it back in `If-None-Match` to receive `304 Not Modified` while it is unchanged.
         * @example "bl-9f86d081884c7d65"
         */
        ETag: string;
        /**
         * @description Marks the endpoint as deprecated (RFC 9745). The value is a structured-field date, `@` followed by the UTC epoch seconds at which the endpoint was deprecated.
         * @example @1735689600
         */
        Deprecation: string;
        /**
         * @description HTTP date after which the endpoint may be removed (RFC 8594). Migrate before then.
         * @example Fri, 31 Dec 2027 23:59:59 GMT
         */
        Sunset: string;
        /**
         * @description Link to the endpoint that replaces this one, with relation type `successor-version` (RFC 5829).
         * @example </api/v2/blacklist>; rel="successor-version"
         */
        Link: string;
    };
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    checkIpPublic: {
        parameters: {
            query: {
                /**
                 * @description The IPv4 or IPv6 address to look up. The schema uses the custom format `ip`: a dotted-quad IPv4 address or an IPv6 address in any RFC 4291 text form, without prefix length or zone.
                 * @example 203.0.113.7
                 */
                ip: components["parameters"]["IpQuery"];
                /**
                 * @description `true` adds `confidenceBreakdown` to the record.
                 * @example false
                 */
                verbose?: boolean;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The reputation record of the address. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CheckPublicEnvelope"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["DomainLimitExceeded"];
            429: components["responses"]["TooManyRequests"];
            default: components["responses"]["ServerError"];
        };
    };
    getPublicStats: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Public statistics. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PublicStatsEnvelope"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["DomainLimitExceeded"];
            429: components["responses"]["TooManyRequests"];
            default: components["responses"]["ServerError"];
        };
    };
    searchIpsPublic: {
        parameters: {
            query: {
                /**
                 * @description Search term, 1-64 characters: a complete or partial IP address, a country code or an autonomous system number (`AS64500`; 0 to 4294967295, a larger number is refused with `400`).
                 * @example 203.0.113.
                 */
                q: string;
                /**
                 * @description Maximum number of results, 1-50.
                 * @example 20
                 */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The matching addresses. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SearchResultsEnvelope"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["DomainLimitExceeded"];
            429: components["responses"]["TooManyRequests"];
            default: components["responses"]["ServerError"];
        };
    };
    listCategories: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description All threat categories, by id. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CategoryListEnvelope"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["DomainLimitExceeded"];
            429: components["responses"]["TooManyRequests"];
            default: components["responses"]["ServerError"];
        };
    };
    getAttackMapData: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The attack map dataset. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AttackMapEnvelope"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["DomainLimitExceeded"];
            429: components["responses"]["TooManyRequests"];
            default: components["responses"]["ServerError"];
        };
    };
    getStatistics: {
        parameters: {
            query?: {
                /**
                 * @deprecated
                 * @description Parameter of the earlier per-account variant (`today`, `week`, `month`, `all`). Accepted and ignored: the response is always the service-wide counters.
                 * @example today
                 */
                period?: "today" | "week" | "month" | "all";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Service statistics. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StatisticsEnvelope"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["DomainLimitExceeded"];
            429: components["responses"]["TooManyRequests"];
            default: components["responses"]["ServerError"];
        };
    };
    listBlacklistCategories: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description All blacklist categories, by id. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BlacklistCategoryListEnvelope"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["DomainLimitExceeded"];
            429: components["responses"]["FaultBudgetExceeded"];
            default: components["responses"]["ServerError"];
        };
    };
    getBlacklistStats: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Blacklist statistics. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BlacklistStatsEnvelope"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["DomainLimitExceeded"];
            429: components["responses"]["FaultBudgetExceeded"];
            default: components["responses"]["ServerError"];
        };
    };
    checkIp: {
        parameters: {
            query: {
                /**
                 * @description The IPv4 or IPv6 address to look up. The schema uses the custom format `ip`: a dotted-quad IPv4 address or an IPv6 address in any RFC 4291 text form, without prefix length or zone.
                 * @example 203.0.113.7
                 */
                ip: components["parameters"]["IpQuery"];
                /**
                 * @description `true` adds `confidenceBreakdown` and `debugInfo` to the record.
                 * @example true
                 */
                verbose?: boolean;
                /**
                 * @description `true` adds `reports`, the 25 newest reports about the address, newest first.
                 * @example false
                 */
                include_reports?: boolean;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The reputation record of the address. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CheckEnvelope"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["DomainLimitExceeded"];
            429: components["responses"]["TooManyRequests"];
            default: components["responses"]["ServerError"];
        };
    };
    checkBlock: {
        parameters: {
            query: {
                /**
                 * @description An IPv4 network from /16 to /32 or an IPv6 network from /48 to /128, in CIDR notation (`198.51.100.0/24`, `2001:db8:85a3::/48`). Host bits may be set: the network they belong to is checked.
                 * @example 203.0.113.0/24
                 */
                network: components["parameters"]["NetworkQuery"];
                /**
                 * @description At most this many reported addresses are returned, the highest scores first. Each address returned costs one check: lower it to bound the charge.
                 * @example 100
                 */
                limit?: components["parameters"]["CheckBlockLimit"];
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
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CheckBlockEnvelope"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["DomainLimitExceeded"];
            422: components["responses"]["CheckBlockUnprocessableEntity"];
            429: components["responses"]["TooManyRequests"];
            default: components["responses"]["ServerError"];
        };
    };
    checkAsn: {
        parameters: {
            query: {
                /**
                 * @description The AS number, without `AS` (`64500` is refused: special-purpose numbers (0, AS_TRANS 23456, documentation, private use and reserved) name no network and answer 400).
                 * @example 208091
                 */
                asn: components["parameters"]["AsnQuery"];
                /**
                 * @description At most this many reported addresses are returned, the highest scores first. Each address returned costs one check: lower it to bound the charge. The summary covers them all.
                 * @example 25
                 */
                limit?: components["parameters"]["CheckAsnLimit"];
                /**
                 * @description Only addresses reported within this many days count (and are returned); without it, every retained report counts.
                 * @example 30
                 */
                maxAgeInDays?: components["parameters"]["MaxAgeInDays"];
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The AS and its reported addresses. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CheckAsnEnvelope"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["DomainLimitExceeded"];
            429: components["responses"]["TooManyRequests"];
            default: components["responses"]["ServerError"];
        };
    };
    reportIp: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ReportRequest"];
                "application/x-www-form-urlencoded": components["schemas"]["ReportRequest"];
            };
        };
        responses: {
            /** @description The report was stored, or aggregated into the account's report from the last 5 minutes. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ReportResultEnvelope"];
                };
            };
            400: components["responses"]["BadRequestBody"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["DomainLimitExceeded"];
            413: components["responses"]["PayloadTooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            422: components["responses"]["ReportUnprocessableEntity"];
            429: components["responses"]["TooManyRequests"];
            default: components["responses"]["ServerError"];
        };
    };
    verifyKey: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Information about the key. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["KeyInfoEnvelope"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            429: components["responses"]["FaultBudgetExceeded"];
            default: components["responses"]["ServerError"];
        };
    };
    getBlacklist: {
        parameters: {
            query?: {
                /**
                 * @description Output format: `json` (the list with its `meta`), `txt` (plain text, one address per line), `csv` (a header line, then one line per address), or a form a firewall loads as it is: `cidr` (one CIDR block per line), `nftables` (an `nft -f` file replacing `table inet trs`), `ipset` (an `ipset restore` file filling the sets `trs-v4` and `trs-v6`), `iptables` and `ip6tables` (an `iptables-restore --noflush` file for the chain `trs-blacklist`, IPv4 and IPv6 entries respectively), `nginx` (a `geo $trs_blacklist` block to include in `http {}`), or `rbldnsd` (a DNS blocklist: a `combined` data file that rbldnsd serves, listed addresses answering `127.0.0.2` with a TXT of their score and categories).
                 * @example json
                 */
                format?: components["parameters"]["BlacklistFormat"];
                /**
                 * @description Source list. `dynamic` is the community-driven, automatically scored list; `community` is its earlier name and returns the same list. Other values are reserved.
                 * @example dynamic
                 */
                source?: components["parameters"]["BlacklistSource"];
                /**
                 * @description Minimum abuse confidence score of the listed addresses, 0-100. Use 90 for automated blocking. Aliases: `confidenceMinimum`, `confidence_minimum`; when an alias is sent it takes precedence over `confidence`.
                 * @example 90
                 */
                confidence?: components["parameters"]["BlacklistConfidence"];
                /**
                 * @description Alias of `confidence`, 0-100 (default 75). When sent, it takes precedence over `confidence`.
                 * @example 90
                 */
                confidenceMinimum?: components["parameters"]["BlacklistConfidenceMinimum"];
                /**
                 * @deprecated
                 * @description Earlier alias of `confidence`, 0-100 (default 75). When sent, it takes precedence over `confidence` and `confidenceMinimum`.
                 * @example 90
                 */
                confidence_minimum?: components["parameters"]["BlacklistConfidenceMinimumLegacy"];
                /**
                 * @description Only addresses reported with at least one of these threat-category ids, separated by commas (for example `18,22` for SSH and brute-force). Combine with `confidence` to build service-specific lists; `GET /blacklist-categories` gives ready-made groups. Unknown ids are refused with 422. Omitted: all categories.
                 * @example 18,22
                 */
                category?: components["parameters"]["BlacklistCategory"];
                /**
                 * @description Maximum number of entries, 1-1,000,000. The list is cut after this many entries, keeping the highest scores.
                 * @example 10000
                 */
                limit?: components["parameters"]["BlacklistLimit"];
                /**
                 * @description `true`: the listed addresses are merged into the smallest set of CIDR blocks that covers exactly them and nothing else. Addresses merge only when together they fill a whole aligned block: `198.51.100.4` and `198.51.100.5` become `198.51.100.4/31`, all 256 addresses of `198.51.100.0`-`198.51.100.255` become `198.51.100.0/24`, while `198.51.100.5` and `198.51.100.6` stay apart (they fill no aligned block). No unlisted address is ever blocked. Taken by the formats `txt`, `cidr`, `nftables`, `ipset`, `iptables`, `ip6tables` and `nginx`; `json` and `csv`, which carry each address's score, refuse it with 422.
                 * @example false
                 */
                aggregate?: components["parameters"]["BlacklistAggregate"];
                /**
                 * @description The `ETag` of a list you hold, fetched with the same other parameters: the answer is then only what was added to and removed from that list since (a delta), with the current list's `ETag`, to send as `since` next time. The server keeps the snapshots of the last few regenerations (8 by default, two hours at the default interval); an older or unknown tag answers `410 Gone`, and the whole list must be fetched again. `nginx` has no delta form (422).
                 * @example "bl-9f86d081884c7d65"
                 */
                since?: components["parameters"]["BlacklistSince"];
            };
            header?: {
                /**
                 * @description The `ETag` of a list or rule set you already hold. When it is unchanged (for the same query parameters), the response is `304 Not Modified` without a body.
                 * @example "bl-9f86d081884c7d65"
                 */
                "If-None-Match"?: components["parameters"]["IfNoneMatch"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The blacklist in the requested format. */
            200: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BlacklistList"] | components["schemas"]["BlacklistDelta"];
                    "text/plain": components["schemas"]["BlacklistText"];
                    "text/csv": components["schemas"]["BlacklistCsv"];
                };
            };
            304: components["responses"]["NotModified"];
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            410: components["responses"]["Gone"];
            422: components["responses"]["BlacklistFormatUnprocessableEntity"];
            429: components["responses"]["FaultBudgetExceeded"];
            default: components["responses"]["ServerError"];
        };
    };
    listReports: {
        parameters: {
            query?: {
                /**
                 * @description Page number, 1-10,000.
                 * @example 1
                 */
                page?: number;
                /**
                 * @description Reports per page, 1-100.
                 * @example 25
                 */
                per_page?: number;
            };
            header?: never;
            path: {
                /**
                 * @description The IPv4 or IPv6 address. The schema uses the custom format `ip`: a dotted-quad IPv4 address or an IPv6 address in any RFC 4291 text form, without prefix length or zone.
                 * @example 203.0.113.7
                 */
                ip: components["parameters"]["IpPath"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of reports. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ReportPageEnvelope"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            429: components["responses"]["FaultBudgetExceeded"];
            default: components["responses"]["ServerError"];
        };
    };
    listReportEvidence: {
        parameters: {
            query?: {
                /**
                 * @description Page number, 1-10,000.
                 * @example 1
                 */
                page?: number;
                /**
                 * @description Reports per page, 1-50 (each carries up to 16 KiB of evidence).
                 * @example 10
                 */
                per_page?: number;
            };
            header?: never;
            path: {
                /**
                 * @description The IPv4 or IPv6 address. The schema uses the custom format `ip`: a dotted-quad IPv4 address or an IPv6 address in any RFC 4291 text form, without prefix length or zone.
                 * @example 203.0.113.7
                 */
                ip: components["parameters"]["IpPath"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of your reports about the address that carry evidence. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ReportEvidencePageEnvelope"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            429: components["responses"]["FaultBudgetExceeded"];
            default: components["responses"]["ServerError"];
        };
    };
    getTrends: {
        parameters: {
            query?: {
                /**
                 * @description Period: `24h`, `7d` or `30d`.
                 * @example 7d
                 */
                period?: "24h" | "7d" | "30d";
                /**
                 * @description Only count reports carrying this threat-category id, one of the enabled catalogue (`GET /categories`); an id outside it gets 422.
                 * @example 22
                 */
                category?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Report activity over the period. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TrendsEnvelope"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            422: components["responses"]["CategoryFilterUnprocessableEntity"];
            429: components["responses"]["FaultBudgetExceeded"];
            default: components["responses"]["ServerError"];
        };
    };
    bulkCheckIps: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["BulkCheckRequest"];
                "application/x-www-form-urlencoded": components["schemas"]["BulkCheckRequest"];
            };
        };
        responses: {
            /** @description The reputation of each valid address, and the invalid entries. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BulkCheckEnvelope"];
                };
            };
            400: components["responses"]["BadRequestBody"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            413: components["responses"]["PayloadTooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            429: components["responses"]["TooManyRequests"];
            default: components["responses"]["ServerError"];
        };
    };
    bulkReportIps: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["BulkReportRequest"];
                "application/x-www-form-urlencoded": components["schemas"]["BulkReportRequest"];
            };
        };
        responses: {
            /** @description The lines were processed; `data` counts the stored and refused ones. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BulkReportEnvelope"];
                };
            };
            400: components["responses"]["BadRequestBody"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            413: components["responses"]["PayloadTooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            429: components["responses"]["TooManyRequests"];
            default: components["responses"]["ServerError"];
        };
    };
    getRelayQuota: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The relay quota of the caller. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RelayQuota"];
                };
            };
            400: components["responses"]["RelayBadRequest"];
            401: components["responses"]["RelayUnauthorized"];
            403: components["responses"]["RelayForbidden"];
            429: components["responses"]["RelayTooManyRequests"];
            default: components["responses"]["RelayServerError"];
        };
    };
    sendRelayMail: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RelayMailRequest"];
                "application/x-www-form-urlencoded": components["schemas"]["RelayMailRequest"];
            };
        };
        responses: {
            /** @description The mail was queued. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RelaySendResult"];
                };
            };
            400: components["responses"]["RelayBadRequest"];
            401: components["responses"]["RelayUnauthorized"];
            402: components["responses"]["RelayPaymentRequired"];
            403: components["responses"]["RelayForbidden"];
            413: components["responses"]["RelayPayloadTooLarge"];
            415: components["responses"]["RelayUnsupportedMediaType"];
            422: components["responses"]["RelayMailUnprocessableEntity"];
            429: components["responses"]["RelayTooManyRequests"];
            default: components["responses"]["RelayServerError"];
        };
    };
    sendRelaySms: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RelaySmsRequest"];
                "application/x-www-form-urlencoded": components["schemas"]["RelaySmsRequest"];
            };
        };
        responses: {
            /** @description The SMS was queued. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RelaySendResult"];
                };
            };
            400: components["responses"]["RelayBadRequest"];
            401: components["responses"]["RelayUnauthorized"];
            402: components["responses"]["RelayPaymentRequired"];
            403: components["responses"]["RelayForbidden"];
            413: components["responses"]["RelayPayloadTooLarge"];
            415: components["responses"]["RelayUnsupportedMediaType"];
            422: components["responses"]["RelaySmsUnprocessableEntity"];
            429: components["responses"]["RelayTooManyRequests"];
            default: components["responses"]["RelayServerError"];
        };
    };
    getBlacklistDetailed: {
        parameters: {
            query?: {
                /**
                 * @description Output format: `json` (the list with its `meta`), `txt` (plain text, one address per line), `csv` (a header line, then one line per address), or a form a firewall loads as it is: `cidr` (one CIDR block per line), `nftables` (an `nft -f` file replacing `table inet trs`), `ipset` (an `ipset restore` file filling the sets `trs-v4` and `trs-v6`), `iptables` and `ip6tables` (an `iptables-restore --noflush` file for the chain `trs-blacklist`, IPv4 and IPv6 entries respectively), `nginx` (a `geo $trs_blacklist` block to include in `http {}`), or `rbldnsd` (a DNS blocklist: a `combined` data file that rbldnsd serves, listed addresses answering `127.0.0.2` with a TXT of their score and categories).
                 * @example json
                 */
                format?: components["parameters"]["BlacklistFormat"];
                /**
                 * @description Source list. `dynamic` is the community-driven, automatically scored list; `community` is its earlier name and returns the same list. Other values are reserved.
                 * @example dynamic
                 */
                source?: components["parameters"]["BlacklistSource"];
                /**
                 * @description Minimum abuse confidence score of the listed addresses, 0-100. Use 90 for automated blocking. Aliases: `confidenceMinimum`, `confidence_minimum`; when an alias is sent it takes precedence over `confidence`.
                 * @example 90
                 */
                confidence?: components["parameters"]["BlacklistConfidence"];
                /**
                 * @description Alias of `confidence`, 0-100 (default 75). When sent, it takes precedence over `confidence`.
                 * @example 90
                 */
                confidenceMinimum?: components["parameters"]["BlacklistConfidenceMinimum"];
                /**
                 * @deprecated
                 * @description Earlier alias of `confidence`, 0-100 (default 75). When sent, it takes precedence over `confidence` and `confidenceMinimum`.
                 * @example 90
                 */
                confidence_minimum?: components["parameters"]["BlacklistConfidenceMinimumLegacy"];
                /**
                 * @description Only addresses reported with at least one of these threat-category ids, separated by commas (for example `18,22` for SSH and brute-force). Combine with `confidence` to build service-specific lists; `GET /blacklist-categories` gives ready-made groups. Unknown ids are refused with 422. Omitted: all categories.
                 * @example 18,22
                 */
                category?: components["parameters"]["BlacklistCategory"];
                /**
                 * @description Maximum number of entries, 1-1,000,000. The list is cut after this many entries, keeping the highest scores.
                 * @example 10000
                 */
                limit?: components["parameters"]["BlacklistLimit"];
            };
            header?: {
                /**
                 * @description The `ETag` of a list or rule set you already hold. When it is unchanged (for the same query parameters), the response is `304 Not Modified` without a body.
                 * @example "bl-9f86d081884c7d65"
                 */
                "If-None-Match"?: components["parameters"]["IfNoneMatch"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The detailed blacklist in the requested format. */
            200: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    Deprecation: components["headers"]["Deprecation"];
                    Sunset: components["headers"]["Sunset"];
                    Link: components["headers"]["Link"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BlacklistDetailedList"];
                    "text/plain": components["schemas"]["BlacklistText"];
                    "text/csv": components["schemas"]["BlacklistCsv"];
                };
            };
            304: components["responses"]["NotModifiedDeprecated"];
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            422: components["responses"]["CategoryFilterUnprocessableEntity"];
            429: components["responses"]["FaultBudgetExceeded"];
            default: components["responses"]["ServerError"];
        };
    };
    getBlacklistCombined: {
        parameters: {
            query?: {
                /**
                 * @description Output format: `json` (the list with its `meta`), `txt` (plain text, one address per line), `csv` (a header line, then one line per address), or a form a firewall loads as it is: `cidr` (one CIDR block per line), `nftables` (an `nft -f` file replacing `table inet trs`), `ipset` (an `ipset restore` file filling the sets `trs-v4` and `trs-v6`), `iptables` and `ip6tables` (an `iptables-restore --noflush` file for the chain `trs-blacklist`, IPv4 and IPv6 entries respectively), `nginx` (a `geo $trs_blacklist` block to include in `http {}`), or `rbldnsd` (a DNS blocklist: a `combined` data file that rbldnsd serves, listed addresses answering `127.0.0.2` with a TXT of their score and categories).
                 * @example json
                 */
                format?: components["parameters"]["BlacklistFormat"];
                /**
                 * @description Source list. `dynamic` is the community-driven, automatically scored list; `community` is its earlier name and returns the same list. Other values are reserved.
                 * @example dynamic
                 */
                source?: components["parameters"]["BlacklistSource"];
                /**
                 * @description Minimum abuse confidence score of the listed addresses, 0-100. Use 90 for automated blocking. Aliases: `confidenceMinimum`, `confidence_minimum`; when an alias is sent it takes precedence over `confidence`.
                 * @example 90
                 */
                confidence?: components["parameters"]["BlacklistConfidence"];
                /**
                 * @description Alias of `confidence`, 0-100 (default 75). When sent, it takes precedence over `confidence`.
                 * @example 90
                 */
                confidenceMinimum?: components["parameters"]["BlacklistConfidenceMinimum"];
                /**
                 * @deprecated
                 * @description Earlier alias of `confidence`, 0-100 (default 75). When sent, it takes precedence over `confidence` and `confidenceMinimum`.
                 * @example 90
                 */
                confidence_minimum?: components["parameters"]["BlacklistConfidenceMinimumLegacy"];
                /**
                 * @description Only addresses reported with at least one of these threat-category ids, separated by commas (for example `18,22` for SSH and brute-force). Combine with `confidence` to build service-specific lists; `GET /blacklist-categories` gives ready-made groups. Unknown ids are refused with 422. Omitted: all categories.
                 * @example 18,22
                 */
                category?: components["parameters"]["BlacklistCategory"];
                /**
                 * @description Maximum number of entries, 1-1,000,000. The list is cut after this many entries, keeping the highest scores.
                 * @example 10000
                 */
                limit?: components["parameters"]["BlacklistLimit"];
            };
            header?: {
                /**
                 * @description The `ETag` of a list or rule set you already hold. When it is unchanged (for the same query parameters), the response is `304 Not Modified` without a body.
                 * @example "bl-9f86d081884c7d65"
                 */
                "If-None-Match"?: components["parameters"]["IfNoneMatch"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The blacklist in the requested format. */
            200: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    Deprecation: components["headers"]["Deprecation"];
                    Sunset: components["headers"]["Sunset"];
                    Link: components["headers"]["Link"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BlacklistList"];
                    "text/plain": components["schemas"]["BlacklistText"];
                    "text/csv": components["schemas"]["BlacklistCsv"];
                };
            };
            304: components["responses"]["NotModifiedDeprecated"];
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            422: components["responses"]["CategoryFilterUnprocessableEntity"];
            429: components["responses"]["FaultBudgetExceeded"];
            default: components["responses"]["ServerError"];
        };
    };
    exportBlacklistGit: {
        parameters: {
            query?: {
                /**
                 * @description Accepted for compatibility and ignored; the response is always plain text.
                 * @example txt
                 */
                format?: "json" | "txt" | "csv";
                /**
                 * @description Source list. `dynamic` is the community-driven, automatically scored list; `community` is its earlier name and returns the same list. Other values are reserved.
                 * @example dynamic
                 */
                source?: components["parameters"]["BlacklistSource"];
                /**
                 * @description Minimum abuse confidence score of the listed addresses, 0-100. Use 90 for automated blocking. Aliases: `confidenceMinimum`, `confidence_minimum`; when an alias is sent it takes precedence over `confidence`.
                 * @example 90
                 */
                confidence?: components["parameters"]["BlacklistConfidence"];
                /**
                 * @description Alias of `confidence`, 0-100 (default 75). When sent, it takes precedence over `confidence`.
                 * @example 90
                 */
                confidenceMinimum?: components["parameters"]["BlacklistConfidenceMinimum"];
                /**
                 * @deprecated
                 * @description Earlier alias of `confidence`, 0-100 (default 75). When sent, it takes precedence over `confidence` and `confidenceMinimum`.
                 * @example 90
                 */
                confidence_minimum?: components["parameters"]["BlacklistConfidenceMinimumLegacy"];
                /**
                 * @description Only addresses reported with at least one of these threat-category ids, separated by commas (for example `18,22` for SSH and brute-force). Combine with `confidence` to build service-specific lists; `GET /blacklist-categories` gives ready-made groups. Unknown ids are refused with 422. Omitted: all categories.
                 * @example 18,22
                 */
                category?: components["parameters"]["BlacklistCategory"];
                /**
                 * @description Maximum number of entries, 1-1,000,000. The list is cut after this many entries, keeping the highest scores.
                 * @example 10000
                 */
                limit?: components["parameters"]["BlacklistLimit"];
            };
            header?: {
                /**
                 * @description The `ETag` of a list or rule set you already hold. When it is unchanged (for the same query parameters), the response is `304 Not Modified` without a body.
                 * @example "bl-9f86d081884c7d65"
                 */
                "If-None-Match"?: components["parameters"]["IfNoneMatch"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The blacklist as plain text. */
            200: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    Deprecation: components["headers"]["Deprecation"];
                    Sunset: components["headers"]["Sunset"];
                    Link: components["headers"]["Link"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": components["schemas"]["BlacklistText"];
                };
            };
            304: components["responses"]["NotModifiedDeprecated"];
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            422: components["responses"]["CategoryFilterUnprocessableEntity"];
            429: components["responses"]["FaultBudgetExceeded"];
            default: components["responses"]["ServerError"];
        };
    };
    submitWhitelistFeedback: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["WhitelistFeedbackRequest"];
                "application/x-www-form-urlencoded": components["schemas"]["WhitelistFeedbackRequest"];
            };
        };
        responses: {
            /** @description The feedback was recorded. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WhitelistFeedbackEnvelope"];
                };
            };
            400: components["responses"]["BadRequestBody"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            413: components["responses"]["PayloadTooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            422: components["responses"]["FeedbackUnprocessableEntity"];
            429: components["responses"]["TooManyRequests"];
            default: components["responses"]["ServerError"];
        };
    };
    getNotificationConfig: {
        parameters: {
            query: {
                /**
                 * @description URL of the site (only its host name counts).
                 * @example https://shop.example.com
                 */
                site_url: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The stored configuration. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotificationConfigEnvelope"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            /** @description Nothing is stored for the site with this key. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorEnvelope"];
                };
            };
            429: components["responses"]["FaultBudgetExceeded"];
            default: components["responses"]["ServerError"];
        };
    };
    saveNotificationConfig: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NotificationConfigRequest"];
                "application/x-www-form-urlencoded": components["schemas"]["NotificationConfigRequest"];
            };
        };
        responses: {
            /** @description The configuration was stored. */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotificationConfigEnvelope"];
                };
            };
            400: components["responses"]["BadRequestBody"];
            401: components["responses"]["Unauthorized"];
            /** @description `domain_limit_exceeded`: the site of `X-Rip-Site` or of `site_url` is new today and the key has already been used from as many sites today as its role allows (see `domains` in `GET /verify-key`). `notification_config_limit_exceeded`: the key holds configurations for 50 sites and `site_url` names another one. Nothing was stored. */
            403: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorEnvelope"];
                };
            };
            413: components["responses"]["PayloadTooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            /** @description `unprocessable`: a recipient or the sender is not exactly one e-mail address, a value holds a line break, or `site_url` is not an http(s) URL with a host name of at most 253 characters. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorEnvelope"];
                };
            };
            429: components["responses"]["FaultBudgetExceeded"];
            default: components["responses"]["ServerError"];
        };
    };
    getStixFeed: {
        parameters: {
            query?: {
                /**
                 * @description Minimum abuse confidence score of the listed addresses, 0-100. Use 90 for automated blocking. Aliases: `confidenceMinimum`, `confidence_minimum`; when an alias is sent it takes precedence over `confidence`.
                 * @example 90
                 */
                confidence?: components["parameters"]["BlacklistConfidence"];
                /**
                 * @description Only addresses reported with at least one of these threat-category ids, separated by commas (for example `18,22` for SSH and brute-force). Combine with `confidence` to build service-specific lists; `GET /blacklist-categories` gives ready-made groups. Unknown ids are refused with 422. Omitted: all categories.
                 * @example 18,22
                 */
                category?: components["parameters"]["BlacklistCategory"];
                /**
                 * @description Maximum number of entries, 1-1,000,000. The list is cut after this many entries, keeping the highest scores.
                 * @example 10000
                 */
                limit?: components["parameters"]["BlacklistLimit"];
            };
            header?: {
                /**
                 * @description The `ETag` of a list or rule set you already hold. When it is unchanged (for the same query parameters), the response is `304 Not Modified` without a body.
                 * @example "bl-9f86d081884c7d65"
                 */
                "If-None-Match"?: components["parameters"]["IfNoneMatch"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The bundle (`Content-Type` `application/stix+json;version=2.1`). */
            200: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/stix+json": components["schemas"]["StixBundle"];
                };
            };
            304: components["responses"]["NotModified"];
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            422: components["responses"]["CategoryFilterUnprocessableEntity"];
            429: components["responses"]["FaultBudgetExceeded"];
            default: components["responses"]["ServerError"];
        };
    };
    getMispManifest: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description The `ETag` of a list or rule set you already hold. When it is unchanged (for the same query parameters), the response is `304 Not Modified` without a body.
                 * @example "bl-9f86d081884c7d65"
                 */
                "If-None-Match"?: components["parameters"]["IfNoneMatch"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The manifest. */
            200: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MispManifest"];
                };
            };
            304: components["responses"]["NotModified"];
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            429: components["responses"]["FaultBudgetExceeded"];
            default: components["responses"]["ServerError"];
        };
    };
    getMispEvent: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description The `ETag` of a list or rule set you already hold. When it is unchanged (for the same query parameters), the response is `304 Not Modified` without a body.
                 * @example "bl-9f86d081884c7d65"
                 */
                "If-None-Match"?: components["parameters"]["IfNoneMatch"];
            };
            path: {
                /**
                 * @description The event's UUID, as the manifest names it.
                 * @example 1f6b1c0e-5a43-5c3d-9b7e-3d1f0c8a2e41
                 */
                event: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The event. */
            200: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MispEventFile"];
                };
            };
            304: components["responses"]["NotModified"];
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["MispEventNotFound"];
            429: components["responses"]["FaultBudgetExceeded"];
            default: components["responses"]["ServerError"];
        };
    };
    createDelistRequest: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["DelistRequestInput"];
            };
        };
        responses: {
            /** @description The request was stored; its confirmation link is mailed within the bounds above. */
            202: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DelistRequestEnvelope"];
                };
            };
            400: components["responses"]["BadRequestBody"];
            401: components["responses"]["Unauthorized"];
            413: components["responses"]["PayloadTooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            422: components["responses"]["DelistUnprocessableEntity"];
            429: components["responses"]["DelistTooManyRequests"];
            default: components["responses"]["ServerError"];
        };
    };
    getDelistRequest: {
        parameters: {
            query: {
                /**
                 * @description The token of the mailed link (43 characters, base64url).
                 * @example q3V0aGVudGljYXRpb25fdG9rZW5fZXhhbXBsZV8wMDE
                 */
                token: string;
            };
            header?: never;
            path: {
                /**
                 * @description The request's id, from the answer to `POST /delist-requests` or the mailed link.
                 * @example 0d7c5f3e-8a41-4c0e-9a51-3f1b2c7d9e10
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The request's status (confirmed now, if it was waiting for this). */
            200: {
                headers: {
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DelistRequestEnvelope"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            404: components["responses"]["DelistNotFound"];
            429: components["responses"]["TooManyRequests"];
            default: components["responses"]["ServerError"];
        };
    };
    listWebhooks: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The subscriptions, oldest first. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookListEnvelope"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            429: components["responses"]["FaultBudgetExceeded"];
            default: components["responses"]["ServerError"];
        };
    };
    createWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["WebhookInput"];
            };
        };
        responses: {
            /** @description The subscription was made; its secret is shown this once. */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookCreatedEnvelope"];
                };
            };
            400: components["responses"]["BadRequestBody"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            413: components["responses"]["PayloadTooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            422: components["responses"]["WebhookUnprocessableEntity"];
            429: components["responses"]["FaultBudgetExceeded"];
            default: components["responses"]["ServerError"];
        };
    };
    deleteWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The subscription's id, from `POST /webhooks` or `GET /webhooks`.
                 * @example 5f0c6a2e-3b8d-4c1f-9e2a-7d4b1c0e9f11
                 */
                id: components["parameters"]["WebhookId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted. */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["WebhookNotFound"];
            429: components["responses"]["FaultBudgetExceeded"];
            default: components["responses"]["ServerError"];
        };
    };
    testWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The subscription's id, from `POST /webhooks` or `GET /webhooks`.
                 * @example 5f0c6a2e-3b8d-4c1f-9e2a-7d4b1c0e9f11
                 */
                id: components["parameters"]["WebhookId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The attempt was made; `delivered` says whether the endpoint took it. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookDeliveryEnvelope"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["WebhookNotFound"];
            413: components["responses"]["PayloadTooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            429: components["responses"]["FaultBudgetExceeded"];
            default: components["responses"]["ServerError"];
        };
    };
    getRuleset: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description The `ETag` of a list or rule set you already hold. When it is unchanged (for the same query parameters), the response is `304 Not Modified` without a body.
                 * @example "bl-9f86d081884c7d65"
                 */
                "If-None-Match"?: components["parameters"]["IfNoneMatch"];
            };
            path: {
                /**
                 * @description The rule set.
                 * @example scan_paths
                 */
                key: "waf" | "bot_signatures" | "disposable_domains" | "scan_paths" | "tor_exits";
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The signed rule set (no envelope). */
            200: {
                headers: {
                    ETag: components["headers"]["ETag"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    RateLimit: components["headers"]["RateLimit"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SignedRuleset"];
                };
            };
            304: components["responses"]["NotModified"];
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            /** @description The operator has not published this rule set (or has configured no signing key). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorEnvelope"];
                };
            };
            429: components["responses"]["FaultBudgetExceeded"];
            default: components["responses"]["ServerError"];
        };
    };
}
