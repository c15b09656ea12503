import type { Clock } from '../../clock.js';
import type { Queryable } from '../../db/pool.js';
import { FALLBACK_LANGUAGE, fillTemplate, languageOf, TEMPLATES_TTL_MS, TemplateError, TEXT_MAX, UnknownTemplateError, type SmsTemplateVars, type TemplateRow } from './templates.js';

/**
 * The SMS templates, as data (`sms_templates`): the built-in ones (2fa_code, 2fa_login,
 * login_code, password_reset_code in English, German, French and Spanish) and the operator's.
 * A text is rendered on the server only, in the requested language or else in English, so the
 * code never passes through a client's logs.
 */
export class SmsTemplates {
  private cached: { until: number; rows: Promise<Map<string, Map<string, string>>> } | undefined;

  constructor(
    private readonly db: Queryable,
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

  async list(): Promise<TemplateRow[]> {
    const { rows } = await this.db.query<TemplateRow>('select code, lang, body, builtin from sms_templates order by code, lang');
    return rows;
  }

  /** Adds or replaces a text (the CLI); a built-in one may be reworded too. */
  async set(code: string, lang: string, body: string): Promise<void> {
    if (!/^[a-z0-9_]{1,40}$/.test(code)) throw new TemplateError('a template name is 1-40 of a-z, 0-9 and _');
    if (!/^[a-z]{2}$/.test(lang)) throw new TemplateError('a language is a two-letter code such as en or de');
    if (!body.includes('{code}')) throw new TemplateError('the text must hold {code}');
    if (body.length > TEXT_MAX || /[\r\n\u0000]/.test(body)) throw new TemplateError(`the text is one line of at most ${TEXT_MAX} characters`);
    await this.db.query(
      `insert into sms_templates (code, lang, body) values ($1, $2, $3)
       on conflict (code, lang) do update set body = excluded.body`,
      [code, lang, body],
    );
    this.cached = undefined;
  }

  async remove(code: string, lang: string): Promise<boolean> {
    const { rowCount } = await this.db.query('delete from sms_templates where code = $1 and lang = $2', [code, lang]);
    this.cached = undefined;
    return (rowCount ?? 0) > 0;
  }
}
