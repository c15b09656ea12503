
export interface SmsTemplateVars {
  code: string;
  expiry_min: number;
  /** A two-letter language, optionally with a region (`de`, `de_DE`, `pt-BR`); the region is ignored. */
  lang?: string;
}

export interface TemplateRow {
  code: string;
  lang: string;
  body: string;
  builtin: boolean;
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
