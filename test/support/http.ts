/** A plain HTTP call for tests that need what the typed client hides (raw bodies, odd headers). */
export interface CallResult {
  status: number;
  headers: Headers;
  body: any;
}

export async function call(
  origin: string,
  path: string,
  options: { method?: string; key?: string; json?: unknown; headers?: Record<string, string>; body?: string } = {},
): Promise<CallResult> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers['X-Key'] = options.key;
  let body = options.body;
  if (options.json !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = JSON.stringify(options.json);
  }
  const res = await fetch(origin + path, { method: options.method ?? (body ? 'POST' : 'GET'), headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

/** What a 429 of an envelope endpoint answers, with the Retry-After it sent. */
export function rateLimitedBody(res: CallResult) {
  const retryAfter = Number(res.headers.get('retry-after'));
  return {
    meta: { success: false, code: 429, message: 'Rate limit exceeded. Try again later.' },
    data: { retryAfter },
    code: 'rate_limited',
    message: 'Rate limit exceeded. Try again later.',
  };
}

/**
 * A call whose path goes on the wire exactly as given: `fetch` resolves dot segments and
 * normalises the URL before sending, which would hide what a hand-made request can do.
 */
export async function rawCall(
  origin: string,
  path: string,
  options: { method?: string; key?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<CallResult> {
  const { request } = await import('node:http');
  const url = new URL(origin);
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers['X-Key'] = options.key;
  if (options.body !== undefined) headers['content-length'] = String(Buffer.byteLength(options.body));
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path, method: options.method ?? 'GET', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON: keep the text
        }
        const h = new Headers();
        for (const [name, value] of Object.entries(res.headers)) if (typeof value === 'string') h.set(name, value);
        resolve({ status: res.statusCode ?? 0, headers: h, body });
      });
    });
    req.on('error', reject);
    req.end(options.body);
  });
}
