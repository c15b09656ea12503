/**
 * Private evidence on reports (issue 28 item 5): what a reporter attaches to a report (log
 * lines) is kept for its reporter and the operator only, and before it is kept the secrets it
 * may hold are taken out. Pure rules: no I/O.
 *
 * Each rule replaces what it finds with a marker naming it (`[redacted:email]`) and is counted,
 * so that the answer can say what was removed. The rules run in a fixed order, most specific
 * first (a whole Authorization header before a bare bearer token, a URL's userinfo before an
 * e-mail address), so one secret is counted once.
 */
import { KEY_LIKE } from '../logging.js';

/** At most this many bytes of UTF-8, as sent and as stored (16 KiB). */
export const EVIDENCE_MAX_BYTES = 16 * 1024;

export const REDACTION_KINDS = [
  'privateKey',
  'apiKey',
  'authorization',
  'cookie',
  'bearer',
  'jwt',
  'urlCredentials',
  'secretParameter',
  'secretField',
  'email',
] as const;
export type RedactionKind = (typeof REDACTION_KINDS)[number];
/** How many of each kind were removed; kinds with none are absent. */
export type Redactions = Partial<Record<RedactionKind, number>>;

export interface RedactedEvidence {
  text: string;
  redactions: Redactions;
  /** The markers made the text longer than EVIDENCE_MAX_BYTES, and its end was cut. */
  truncated: boolean;
}

const marker = (kind: RedactionKind) => `[redacted:${kind}]`;

/**
 * Names of parameters and fields that hold secrets: passwords, keys, tokens, signatures,
 * sessions (`api_key`, `access_token`, `client_secret`, `X-Amz-Signature`, `sessionid` …).
 */
const SECRET_NAME =
  '(?:[A-Za-z0-9]+[_.-])*(?:password|passwd|passphrase|pass|pwd|secret|token|apikey|api[_-]key|key|sig|signature|credentials?|sessionid|sid|accesstoken|otp)';

/** One rule: a pattern and what it becomes; `replace` gets the match and its groups. */
interface Rule {
  kind: RedactionKind;
  pattern: RegExp;
  /** What the match becomes; null: it holds no secret (already a marker, empty), kept as it is. */
  replace: (match: string, ...groups: string[]) => string | null;
}

const RULES: Rule[] = [
  {
    // PEM private keys pasted into a log, whole.
    kind: 'privateKey',
    pattern: /-----BEGIN ([A-Z ]*)PRIVATE KEY-----[\s\S]*?(?:-----END \1PRIVATE KEY-----|$)/g,
    replace: () => marker('privateKey'),
  },
  {
    // This server's own keys (trs_…, bouncers' trsb_…), wherever they stand: the log redaction's pattern.
    kind: 'apiKey',
    pattern: new RegExp(KEY_LIKE.source, 'gi'),
    replace: () => marker('apiKey'),
  },
  {
    // Authorization and Proxy-Authorization headers (a header line to its end, a quoted JSON
    // value to its quote): the scheme stays, its credentials go.
    kind: 'authorization',
    pattern: /\b((?:proxy-)?authorization"?\s*[:=]\s*)(?:"([^"\n]*)"|([^\s"][^\n]*))/gi,
    replace: (_m, head: string, quoted?: string, plain?: string) => {
      const value = quoted ?? plain ?? '';
      const scheme = /^(?:basic|bearer|digest|negotiate|ntlm|token|apikey|hmac[\w-]*|aws4-hmac-sha256)\s+/i.exec(value)?.[0] ?? '';
      const credentials = value.slice(scheme.length);
      if (credentials.trim() === '' || credentials.startsWith('[redacted:')) return null;
      const kept = `${scheme}${marker('authorization')}`;
      return `${head}${quoted === undefined ? kept : `"${kept}"`}`;
    },
  },
  {
    // Cookie and Set-Cookie headers: every value goes, the names stay.
    kind: 'cookie',
    pattern: /\b((?:set-)?cookie2?"?\s*:\s*"?)([^\n"]*)/gi,
    replace: (_m, head: string, value: string) => {
      if (!/=\s*(?!\[redacted:)[^;,\s"]/.test(value)) return null;
      return `${head}${value.replace(/=\s*(?!\[redacted:)[^;,\s"]*/g, `=${marker('cookie')}`)}`;
    },
  },
  {
    kind: 'bearer',
    pattern: /\b(bearer\s+)[A-Za-z0-9\-._~+/]{8,}=*/gi,
    replace: (_m, head: string) => `${head}${marker('bearer')}`,
  },
  {
    // JSON Web Tokens outside any header (a URL, a body).
    kind: 'jwt',
    pattern: /\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g,
    replace: () => marker('jwt'),
  },
  {
    // scheme://user:password@host (and scheme://token@host): the userinfo goes, the host stays.
    kind: 'urlCredentials',
    pattern: /\b([a-z][a-z0-9+.-]*:\/\/)(?!\[redacted:)[^\s/?#@"'<>]+@(?=[^\s@])/gi,
    replace: (_m, scheme: string) => `${scheme}${marker('urlCredentials')}@`,
  },
  {
    // name=value in a query string or a form body, for secret names (any case): `?password=…`,
    // `&api_key=…`, `;jsessionid=…`, `pwd=…` at the start of a body.
    kind: 'secretParameter',
    pattern: new RegExp(`((?:^|[?&;\\s"'(])${SECRET_NAME})=(?!"?\\[redacted:)("[^"]*"|[^&;\\s"'#<>)]+)`, 'gim'),
    replace: (_m, head: string) => `${head}=${marker('secretParameter')}`,
  },
  {
    // name: value and "name": "value" (JSON, YAML, key-value logs) for secret names; a word
    // after a name without a colon ("Failed password for root") is no value.
    kind: 'secretField',
    pattern: new RegExp(`((?:^|[\\s{,"'(])"?(?:${SECRET_NAME})"?\\s*:\\s*)(?!"?\\[redacted:)("(?:[^"\\\\]|\\\\.)*"|'[^']*'|[^\\s,;}"']+)`, 'gim'),
    replace: (_m, head: string, value: string) => `${head}${value.startsWith('"') ? `"${marker('secretField')}"` : marker('secretField')}`,
  },
  {
    kind: 'email',
    pattern: /[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}\b/g,
    replace: () => marker('email'),
  },
];

/** Line ends as line feeds, and no control character but tab and line feed. */
const CONTROL = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/g;
export const normaliseEvidence = (text: string) => text.replace(/\r\n?/g, '\n').replace(CONTROL, '');

export const evidenceBytes = (text: string) => Buffer.byteLength(text, 'utf8');

/** The longest start of `text` that fits in `max` bytes of UTF-8, never splitting a character. */
export function fitBytes(text: string, max: number): string {
  if (evidenceBytes(text) <= max) return text;
  let bytes = 0;
  let end = 0;
  for (const char of text) {
    const size = evidenceBytes(char);
    if (bytes + size > max) break;
    bytes += size;
    end += char.length;
  }
  return text.slice(0, end);
}

/**
 * The evidence as it may be kept: normalised, each secret replaced with a marker, counted by
 * kind, and cut to EVIDENCE_MAX_BYTES should the markers have made it longer.
 */
export function redactEvidence(input: string): RedactedEvidence {
  let text = normaliseEvidence(input);
  const redactions: Redactions = {};
  for (const rule of RULES) {
    text = text.replace(rule.pattern, (...args: unknown[]) => {
      // (match, ...groups, offset, whole text): no rule has named groups.
      const replaced = rule.replace(args[0] as string, ...(args.slice(1, -2) as string[]));
      if (replaced === null) return args[0] as string;
      redactions[rule.kind] = (redactions[rule.kind] ?? 0) + 1;
      return replaced;
    });
  }
  const fitted = fitBytes(text, EVIDENCE_MAX_BYTES);
  return { text: fitted, redactions, truncated: fitted.length < text.length };
}

/** Sums redaction counts (a bulk report's lines, an aggregated report's submissions). */
export function addRedactions(into: Redactions, more: Redactions): Redactions {
  for (const kind of REDACTION_KINDS) {
    const n = more[kind];
    if (n) into[kind] = (into[kind] ?? 0) + n;
  }
  return into;
}

/**
 * Two pieces of evidence of one report (a submission aggregated into an earlier one): joined by
 * a line feed while the whole fits EVIDENCE_MAX_BYTES; else the earlier stays as it is.
 */
export function joinEvidence(earlier: string | null, later: string | null): string | null {
  if (earlier === null || earlier === '') return later;
  if (later === null || later === '') return earlier;
  const joined = `${earlier}\n${later}`;
  return evidenceBytes(joined) <= EVIDENCE_MAX_BYTES ? joined : earlier;
}
