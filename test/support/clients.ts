/**
 * Request encodings of the ReportedIP clients (PHP), written from their documented behaviour,
 * so that tests can send exactly the bytes those clients send.
 */

/**
 * PHP's `http_build_query($data, '', '&')` with its default RFC 1738 encoding (what WordPress
 * sends for an array body and the honeypot's cURL posts): a space becomes `+`, everything but
 * letters, digits and `-_.` is percent-encoded, nested arrays become `name[0]=…`/`name[key]=…`.
 */
export function phpFormEncode(data: Record<string, unknown>): string {
  const encode = (text: string) =>
    encodeURIComponent(text)
      .replace(/[!'()*~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
      .replace(/%20/g, '+');
  const pairs: string[] = [];
  const walk = (prefix: string, value: unknown) => {
    if (value === null || value === undefined) return;
    if (Array.isArray(value)) value.forEach((v, i) => walk(`${prefix}[${i}]`, v));
    else if (typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(`${prefix}[${k}]`, v);
    else pairs.push(`${encode(prefix)}=${encode(typeof value === 'boolean' ? (value ? '1' : '0') : String(value))}`);
  };
  for (const [key, value] of Object.entries(data)) walk(key, value);
  return pairs.join('&');
}

/** WordPress's `wp_json_encode`: JSON with `/` escaped and everything outside ASCII as `\uXXXX`. */
export function wpJsonEncode(value: unknown): string {
  return JSON.stringify(value)
    .replace(/\//g, '\\/')
    .replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The tier a Hive plugin concludes from `userRole` (anything it does not know reads as free). */
export function hiveTierFromRole(role: unknown): string {
  const known = ['free', 'contributor', 'professional', 'business', 'enterprise', 'honeypot'];
  const match = typeof role === 'string' ? /^reportedip_(.+)$/.exec(role) : null;
  if (match && known.includes(match[1]!)) return match[1]!;
  return role === 'administrator' ? 'enterprise' : 'free';
}

/** Hive's tier order for its feature gates (a tier outside it passes no gate). */
export function hiveTierAtLeast(tier: string, minimum: string): boolean {
  const order = ['free', 'contributor', 'professional', 'business', 'enterprise'];
  return order.includes(tier) && order.includes(minimum) && order.indexOf(tier) >= order.indexOf(minimum);
}

/**
 * The licensed-domains warning Hive shows on its pages and the dashboard card after reading
 * `/verify-key`: it stores `domains` as its snapshot and warns whenever `status` is
 * `over_limit`, naming `used` and `limit`. Undefined: no warning.
 */
export function hiveDomainNotice(domains: { used?: unknown; limit?: unknown; status?: unknown }): string | undefined {
  if (String(domains.status ?? 'ok') !== 'over_limit') return undefined;
  return `Your Community Access Key is used on ${Number(domains.used ?? 0)} domains, but your plan includes ${Math.max(0, Number(domains.limit ?? -1))}.`;
}

/**
 * WordPress's `sanitize_email()`: what is left of an address once characters that may not
 * stand in a local part or a host name are dropped (a display name and its brackets are not
 * parsed, only stripped of what is not allowed), or '' when no address remains.
 */
export function wpSanitizeEmail(email: string): string {
  if (email.length < 6 || email.indexOf('@', 1) < 1) return '';
  const at = email.indexOf('@');
  const local = email.slice(0, at).replace(/[^a-zA-Z0-9!#$%&'*+/=?^_`{|}~.-]/g, '');
  if (local === '') return '';
  const domain = email
    .slice(at + 1)
    .replace(/\.{2,}/g, '')
    .replace(/^[ \t\n\r\0\x0B.]+|[ \t\n\r\0\x0B.]+$/g, '');
  const subs = domain.split('.');
  if (domain === '' || subs.length < 2) return '';
  const kept = subs.map((sub) => sub.replace(/^[ \t\n\r\0\x0B-]+|[ \t\n\r\0\x0B-]+$/g, '').replace(/[^a-z0-9-]+/gi, '')).filter((sub) => sub !== '');
  return kept.length < 2 ? '' : `${local}@${kept.join('.')}`;
}
