import type { TestServer } from './server.js';
import { eventually, type startSmtp } from './relay-fakes.js';

export interface PageResult {
  status: number;
  headers: Headers;
  text: string;
  /** The CSRF token of the page's forms, if it has any. */
  csrf: string | undefined;
  /** Set-Cookie lines of the answer, as sent. */
  setCookies: string[];
}

/**
 * A browser in miniature for the pages: a cookie jar, redirects not followed, and the CSRF token
 * of the last page sent with each form unless a test says otherwise.
 */
export class WebClient {
  readonly cookies = new Map<string, string>();
  csrf: string | undefined;

  constructor(
    readonly origin: string,
    /** Sent with every request (e.g. X-Forwarded-For to be another address). */
    readonly headers: Record<string, string> = {},
  ) {}

  private cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  private async request(path: string, init: RequestInit & { headers?: Record<string, string> }): Promise<PageResult> {
    const res = await fetch(this.origin + path, {
      ...init,
      redirect: 'manual',
      headers: { ...this.headers, ...(this.cookies.size ? { cookie: this.cookieHeader() } : {}), ...init.headers },
    });
    const setCookies = res.headers.getSetCookie();
    for (const line of setCookies) {
      const [pair, ...attributes] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      if (attributes.some((a) => /^\s*max-age=0$/i.test(a))) this.cookies.delete(name);
      else this.cookies.set(name, pair!.slice(eq + 1));
    }
    const text = await res.text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(text)?.[1];
    if (csrf) this.csrf = csrf;
    return { status: res.status, headers: res.headers, text, csrf, setCookies };
  }

  get(path: string, headers: Record<string, string> = {}): Promise<PageResult> {
    return this.request(path, { method: 'GET', headers });
  }

  /** Posts a form; `csrf: null` leaves the token out, a string sends that one instead. */
  post(
    path: string,
    fields: Record<string, string>,
    options: { csrf?: string | null; headers?: Record<string, string>; body?: string; contentType?: string } = {},
  ): Promise<PageResult> {
    const token = options.csrf === undefined ? this.csrf : options.csrf;
    const body = options.body ?? new URLSearchParams({ ...(token === null || token === undefined ? {} : { _csrf: token }), ...fields }).toString();
    return this.request(path, {
      method: 'POST',
      body,
      headers: { 'content-type': options.contentType ?? 'application/x-www-form-urlencoded', ...options.headers },
    });
  }
}

/** The `<h1>` of a page. */
export const heading = (page: PageResult) => /<h1>([^<]*)<\/h1>/.exec(page.text)?.[1];

/** The first link to `path` in the last mail to `to`. */
export async function linkFromMail(smtp: Awaited<ReturnType<typeof startSmtp>>, to: string, path: string, after = 0): Promise<string> {
  const find = () => smtp.received.slice(after).reverse().find((m) => m.envelopeTo.includes(to) && (m.mail.text ?? '').includes(path));
  await eventually(() => find() !== undefined);
  const match = new RegExp(`https?://[^\\s]+${path.replace(/[/?]/g, '\\$&')}\\?token=[A-Za-z0-9_-]{43}`).exec(find()!.mail.text ?? '');
  return match![0];
}

/** Signs up, follows the mailed link and signs in; returns the signed-in client. */
export async function signedUp(
  s: TestServer,
  smtp: Awaited<ReturnType<typeof startSmtp>>,
  email: string,
  password = 'correct horse battery',
  headers: Record<string, string> = {},
): Promise<WebClient> {
  const web = new WebClient(s.origin, headers);
  await web.get('/account/register');
  const before = smtp.received.length;
  const registered = await web.post('/account/register', { email, password });
  if (registered.status !== 200) throw new Error(`sign-up answered ${registered.status}`);
  const link = new URL(await linkFromMail(smtp, email, '/account/verify', before));
  await web.get(link.pathname + link.search);
  const verified = await web.post('/account/verify', { token: link.searchParams.get('token')! });
  if (verified.status !== 200) throw new Error(`verification answered ${verified.status}`);
  await web.get('/account/sign-in');
  const signedIn = await web.post('/account/sign-in', { email, password });
  if (signedIn.status !== 303) throw new Error(`sign-in answered ${signedIn.status}`);
  await web.get('/account');
  return web;
}

/**
 * Generates a key on the dashboard as a browser does: the form answers 303 to the page that
 * shows the new key once, which is then fetched. Returns the form's answer, the page and the key.
 */
export async function generateKey(web: WebClient, name: string): Promise<{ posted: PageResult; page: PageResult | undefined; key: string | undefined }> {
  const posted = await web.post('/account/keys', { name });
  if (posted.status !== 303 || posted.headers.get('location') !== '/account/keys/new') return { posted, page: undefined, key: undefined };
  const page = await web.get('/account/keys/new');
  return { posted, page, key: /value="(trs_[A-Za-z0-9_-]{43})"/.exec(page.text)?.[1] };
}
