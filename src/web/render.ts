import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Request, Response } from 'express';
import { Eta } from 'eta';
import { projectRoot } from '../openapi.js';

/**
 * Server-rendered pages with Eta (auto-escaping on: `<%= %>` escapes, and `<%~ %>` is used only
 * for markup we build ourselves, such as the SVG charts). Every page works without JavaScript;
 * the one script (public/app.js) only adds a copy button.
 */
const VIEWS = path.join(projectRoot, 'views');
const PUBLIC = path.join(projectRoot, 'public');

const TYPES: Record<string, string> = { '.css': 'text/css; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.svg': 'image/svg+xml' };

/**
 * Static files of the project (public/), served under a name with their content hash
 * (`/assets/site.3f2a9c1e0b7d.css`) and cached for a year: a new release changes the name, so
 * no browser keeps an old file. Nothing is loaded from another origin.
 */
export class Assets {
  private readonly files = new Map<string, { body: Buffer; type: string }>();
  readonly urls: Record<string, string> = {};

  constructor(names: string[] = ['site.css', 'app.js', 'favicon.svg']) {
    for (const name of names) {
      const body = readFileSync(path.join(PUBLIC, name));
      const ext = path.extname(name);
      const hashed = `${path.basename(name, ext)}.${createHash('sha256').update(body).digest('hex').slice(0, 12)}${ext}`;
      this.files.set(hashed, { body, type: TYPES[ext] ?? 'application/octet-stream' });
      this.urls[name] = `/assets/${hashed}`;
    }
  }

  serve(req: Request, res: Response): boolean {
    const file = this.files.get(String(req.params.file));
    if (!file) return false;
    res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
    res.type(file.type).send(file.body);
    return true;
  }
}

export interface PageContext {
  serviceName: string;
  /** Signed in as (shown in the header), if anyone. */
  signedInAs?: string;
  /** The CSRF token of this browser, for every form on the page. */
  csrf: string;
}

export class Pages {
  private readonly eta = new Eta({ views: VIEWS, autoEscape: true, cache: true, defaultExtension: '.eta' });

  constructor(
    readonly assets: Assets,
    /** Where forms may send the browser besides this origin (Stripe Checkout, when configured). */
    private readonly formTargets: string[],
  ) {}

  private csp(): string {
    return [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      "img-src 'self' data:",
      "connect-src 'self'",
      `form-action 'self'${this.formTargets.map((t) => ` ${t}`).join('')}`,
      "frame-ancestors 'none'",
      "base-uri 'none'",
    ].join('; ');
  }

  /** Renders `view` inside the layout and sends it; pages are never cached (they hold tokens). */
  send(res: Response, view: string, context: PageContext & Record<string, unknown>, status = 200): void {
    const html = this.eta.render(view, { ...context, assets: this.assets.urls });
    res.status(status);
    res.setHeader('Content-Security-Policy', this.csp());
    res.setHeader('Cache-Control', 'no-store');
    // Links with tokens (verification, reset) never leave in a Referer; same-origin forms get an Origin.
    res.setHeader('Referrer-Policy', 'same-origin');
    res.type('text/html; charset=utf-8').send(html);
  }
}
