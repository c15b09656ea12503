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
