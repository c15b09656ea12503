import type { Clock } from '../../clock.js';
import type { SmsTemplate } from '../../db/entities/relay.js';

export interface SmsTemplateVars {
  code: string;
  expiry_min: number;
  /** A two-letter language, optionally with a region (`de`, `de_DE`, `pt-BR`); the region is ignored. */
  lang?: string;
}

export type TemplateRow = Pick<SmsTemplate, 'code' | 'lang' | 'body' | 'builtin'>;

/** Where the templates are kept (templates.repository.ts: the table, through its entity). */
export interface TemplateStore {
  /** Every text, by name and language. */
  list(): Promise<TemplateRow[]>;
  /** Adds or replaces a text. */
  set(code: string, lang: string, body: string): Promise<void>;
  /** Removes a text; false when there was none. */
  remove(code: string, lang: string): Promise<boolean>;
}

/** A template name no row has: the caller answers `unknown_template`. */
export class UnknownTemplateError extends Error {}

/** A change to the templates the operator asked for that cannot be made. */
export class TemplateError extends Error {}

export const FALLBACK_LANGUAGE = 'en';
/** How long a process trusts what it read: an operator's change reaches every process within it. */
export const TEMPLATES_TTL_MS = 30_000;
/** The longest template text, the column's check (sms_templates_body_check). */
export const TEXT_MAX = 480;

/** `de_DE` -> `de`; anything that is not a language code -> undefined. */
export function languageOf(lang: string | undefined): string | undefined {
  const match = /^([A-Za-z]{2})(?:[_-][A-Za-z]{2})?$/.exec(lang ?? '');
  return match ? match[1]!.toLowerCase() : undefined;
}

/**
 * Fills a template: `{code}` and `{expiry}` ("10 minutes", in the language, by the runtime's
 * ICU data), prefixed with `siteName` ("example.com: ...") when one is given.
 */
export function fillTemplate(body: string, vars: SmsTemplateVars, lang: string, siteName?: string): string {
  const expiry = new Intl.NumberFormat(lang, { style: 'unit', unit: 'minute', unitDisplay: 'long' }).format(vars.expiry_min);
  const text = body.replaceAll('{code}', vars.code).replaceAll('{expiry}', expiry);
  return siteName ? `${siteName}: ${text}` : text;
}

/**
 * The SMS templates, as data (`sms_templates`): the built-in ones (2fa_code, 2fa_login,
 * login_code, password_reset_code in English, German, French and Spanish) and the operator's.
 * A text is rendered on the server only, in the requested language or else in English, so the
 * code never passes through a client's logs.
 */
export class SmsTemplates {
  private cached: { until: number; rows: Promise<Map<string, Map<string, string>>> } | undefined;

  constructor(
    private readonly store: TemplateStore,
    private readonly clock: Clock,
  ) {}

  private byCode(): Promise<Map<string, Map<string, string>>> {
    const now = this.clock.now().getTime();
    if (!this.cached || this.cached.until <= now) {
      const rows = this.list().then((list) => {
        const map = new Map<string, Map<string, string>>();
        for (const row of list) {
          if (!map.has(row.code)) map.set(row.code, new Map());
          map.get(row.code)!.set(row.lang, row.body);
        }
        return map;
      });
      const entry = { until: now + TEMPLATES_TTL_MS, rows };
      rows.catch(() => {
        if (this.cached === entry) this.cached = undefined;
      });
      this.cached = entry;
    }
    return this.cached.rows;
  }

  /** The rendered text; throws UnknownTemplateError for a template of no name. */
  async render(code: string, vars: SmsTemplateVars, siteName?: string): Promise<string> {
    const languages = (await this.byCode()).get(code);
    if (!languages) throw new UnknownTemplateError(`no SMS template ${code}`);
    const wanted = languageOf(vars.lang) ?? FALLBACK_LANGUAGE;
    const lang = languages.has(wanted) ? wanted : languages.has(FALLBACK_LANGUAGE) ? FALLBACK_LANGUAGE : [...languages.keys()].sort()[0]!;
    return fillTemplate(languages.get(lang)!, vars, lang, siteName);
  }

  list(): Promise<TemplateRow[]> {
    return this.store.list();
  }

  /** Adds or replaces a text (the CLI); a built-in one may be reworded too. */
  async set(code: string, lang: string, body: string): Promise<void> {
    if (!/^[a-z0-9_]{1,40}$/.test(code)) throw new TemplateError('a template name is 1-40 of a-z, 0-9 and _');
    if (!/^[a-z]{2}$/.test(lang)) throw new TemplateError('a language is a two-letter code such as en or de');
    if (!body.includes('{code}')) throw new TemplateError('the text must hold {code}');
    if (body.length > TEXT_MAX || /[\r\n\u0000]/.test(body)) throw new TemplateError(`the text is one line of at most ${TEXT_MAX} characters`);
    await this.store.set(code, lang, body);
    this.cached = undefined;
  }

  async remove(code: string, lang: string): Promise<boolean> {
    const removed = await this.store.remove(code, lang);
    this.cached = undefined;
    return removed;
  }
}
