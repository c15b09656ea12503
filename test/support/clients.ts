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
