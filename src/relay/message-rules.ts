import addressparser from 'nodemailer/lib/addressparser';
import { parsePhoneNumberFromString, type NumberType } from 'libphonenumber-js/max';
import { SITE_URL_RULE, siteHost } from '../keys/sites.js';
import { isPrintableLine } from '../text.js';

/**
 * What a relayed message may hold, checked by the relay service itself whatever the route or
 * validator did before: the limits mirror the OpenAPI document (a unit test holds the two
 * together), and every value that ends up in a mail header is refused with a line break in it.
 */
export const MESSAGE_LIMITS = {
  subjectMax: 255,
  bodyMax: 100_000,
  addressMax: 254,
  replyToMax: 320,
  headersMax: 10,
  headerNameMax: 76,
  headerValueMax: 998,
  siteUrlMax: 2048,
  smsTextMax: 480,
  /**
   * The name that prefixes a templated SMS ("example.com: Your code ...", "Brand Shop: ..."):
   * the site's host name, or a white-label account's sender name. One bound for both
   * (`checkSmsPrefix`), since either may stand at the head of the text.
   */
  smsPrefixMax: 40,
  codePattern: /^[0-9]{4,10}$/,
  expiryMin: 1,
  expiryMax: 60,
} as const;

/** A broken rule: the field and a sentence for the caller. */
export class MessageRuleError extends Error {
  constructor(
    readonly field: string,
    message: string,
    /** The relay error code; `invalid_request` unless the rule has one of its own. */
    readonly code = 'invalid_request',
  ) {
    super(message);
  }
}

const LINE_BREAK = /[\r\n\u2028\u2029]/;
/** C0 controls but tab, DEL, and the C1 range: never part of a header-bound value. */
const CONTROL = /[\u0000-\u0008\u000A-\u001F\u007F-\u009F]/;

/** A single-line value (a header, an address, a subject): no line break, no control character. */
export function singleLine(field: string, value: string, max: number): string {
  if (LINE_BREAK.test(value) || CONTROL.test(value)) throw new MessageRuleError(field, `${field} must be one line without control characters`);
  if (value.length > max) throw new MessageRuleError(field, `${field} is longer than ${max} characters`);
  return value;
}

export function boundedText(field: string, value: string, max: number): string {
  if (value.length > max) throw new MessageRuleError(field, `${field} is longer than ${max} characters`);
  if (value.includes('\u0000')) throw new MessageRuleError(field, `${field} must not contain NUL characters`);
  return value;
}

/**
 * A name that may prefix an SMS: one line, printable (src/text.ts: no control character, no
 * bidi control), at most `smsPrefixMax` characters. The
 * site's host at each send and a white-label sender name when it is set are checked here alike.
 */
export function checkSmsPrefix(field: string, name: string, what = field): string {
  if (!isPrintableLine(name)) throw new MessageRuleError(field, `${what} must be one line without control or bidirectional formatting characters`);
  if (name.length > MESSAGE_LIMITS.smsPrefixMax) {
    throw new MessageRuleError(field, `${what}, which prefixes the SMS, is longer than ${MESSAGE_LIMITS.smsPrefixMax} characters`);
  }
  return name;
}

/**
 * A link in a free-text SMS: any `scheme://`, a `www.` name, or a host name or IPv4 address
 * followed by a path (`paypa1-secure.example/login`, `bit.ly/x`, `203.0.113.9/x`), dots
 * including the ideographic and full-width ones a browser reads as dots. A host named alone
 * ("your code for shop.example.com") is not a link by this rule: sites name themselves.
 */
const LINK = /[a-z][a-z0-9+.-]*:\/\/|(?<![\p{L}\p{N}])www\d{0,3}[.\u3002\uFF0E\uFF61]|[\p{L}\p{N}-]+[.\u3002\uFF0E\uFF61]\p{L}[\p{L}\p{N}-]*(?::\d{1,5})?\/|\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?\//iu;

/** Free text of an SMS: no link in it (a 2FA SMS carries a code; a link in one is smishing). */
export function checkNoLink(field: string, text: string): string {
  if (LINK.test(text)) {
    throw new MessageRuleError(field, `${field} must not contain a link (an http(s):// URL, a www. name or a host name with a path); send the code alone`, 'url_not_allowed');
  }
  return text;
}

/** `local@domain` with a dot in the domain and nothing that needs quoting. */
const ADDRESS = /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$/;

export interface Mailbox {
  /** The address alone, lower-cased: what is delivered to, throttled and recorded. */
  address: string;
  /** The display name, if one was given. */
  name: string;
}

/**
 * Exactly one mailbox, plain or `Display Name <address>`, parsed by nodemailer's address
 * parser: a list, a group, a comment that hides a second address, or anything with a line
 * break is refused.
 */
export function parseMailbox(field: string, text: string, max: number): Mailbox {
  singleLine(field, text, max);
  const parsed = addressparser(text);
  const only = parsed.length === 1 ? parsed[0] : undefined;
  if (!only || 'group' in only || !only.address || !ADDRESS.test(only.address) || only.address.length > MESSAGE_LIMITS.addressMax) {
    throw new MessageRuleError(field, `${field} must be exactly one e-mail address, plain or in the form Display Name <address>`);
  }
  return { address: only.address.toLowerCase(), name: only.name ?? '' };
}

/** Custom headers a caller may add as they are. */
const CUSTOM_HEADER = /^X-[A-Za-z0-9-]+$/;
/**
 * Headers that name who a mail goes to or comes from, or trace and sign its way (envelope,
 * identity, routing, authentication): a caller that sends one means the mail to be something
 * the relay would not make it, so the send is refused rather than sent without it.
 */
const IDENTITY_HEADERS = new Set([
  'to',
  'cc',
  'bcc',
  'sender',
  'return-path',
  'received',
  'received-spf',
  'dkim-signature',
  'domainkey-signature',
  'authentication-results',
  'arc-seal',
  'arc-message-signature',
  'arc-authentication-results',
  'message-id',
  'delivered-to',
  'envelope-to',
  'original-recipient',
  'disposition-notification-to',
  'return-receipt-to',
]);
const IDENTITY_PREFIXES = ['resent-'];
/** The display name of a `From` header, the sender name of the mail; its address is never used. */
const SENDER_NAME_MAX = 64;

export interface MailHeaders {
  /** `X-` headers, added as they are. */
  custom: { name: string; value: string }[];
  /** From `Content-Type`: send only the plain-text body, or the HTML body (with the text as fallback). */
  format?: 'text' | 'html';
  /** The display name of `From`. */
  senderName?: string;
  /** `Reply-To` given as a header. */
  replyTo?: Mailbox;
  /** The names of headers left out of the mail (harmless ones the relay does not copy), as sent. */
  ignored: string[];
}

/**
 * The headers of a send, as an array of `{name, value}` or a `{Name: value}` map (the
 * ReportedIP plugins send the map, `[]` when empty). `X-` headers are added; `Content-Type`,
 * `From` and `Reply-To` are taken into account, never copied, so that no caller can change the
 * encoding, forge the sender or inject a header. Headers of the envelope, identity and trace
 * (`To`, `Cc`, `Bcc`, `Sender`, `Return-Path`, `Received`, `DKIM-Signature`, `Message-ID`,
 * `Resent-*` …) are refused; any other (`MIME-Version`, `Date`, `Auto-Submitted`,
 * `List-Unsubscribe`, `Precedence` …) is left out and named in `ignored`, so that a header a
 * site's mail filter adds never stops a 2FA mail (the plugins fall back to their own mail only
 * on 402, 429 and 5xx). A line break or control character anywhere is refused.
 */
export function interpretHeaders(input: unknown): MailHeaders {
  const list: { name: string; value: unknown }[] = Array.isArray(input)
    ? (input as { name?: unknown; value?: unknown }[]).map((h) => ({ name: String(h?.name ?? ''), value: h?.value }))
    : input && typeof input === 'object'
      ? Object.entries(input as Record<string, unknown>).map(([name, value]) => ({ name, value }))
      : [];
  if (list.length > MESSAGE_LIMITS.headersMax) {
    throw new MessageRuleError('headers', `at most ${MESSAGE_LIMITS.headersMax} headers are taken`);
  }
  const result: MailHeaders = { custom: [], ignored: [] };
  list.forEach(({ name, value }, i) => {
    const field = `headers[${i}]`;
    singleLine(`${field}.name`, name, MESSAGE_LIMITS.headerNameMax);
    if (!/^[A-Za-z0-9-]+$/.test(name)) throw new MessageRuleError(`${field}.name`, `${field}.name must be letters, digits and hyphens`);
    if (typeof value !== 'string') throw new MessageRuleError(`${field}.value`, `${field}.value must be a string`);
    const text = singleLine(`${field}.value`, value, MESSAGE_LIMITS.headerValueMax).trim();
    const lower = name.toLowerCase();
    if (CUSTOM_HEADER.test(name)) result.custom.push({ name, value: text });
    else if (lower === 'content-type') result.format = contentFormat(field, text);
    else if (lower === 'from') result.senderName = senderName(field, text);
    else if (lower === 'reply-to') result.replyTo = parseMailbox(`${field}.value`, text, MESSAGE_LIMITS.replyToMax);
    else if (IDENTITY_HEADERS.has(lower) || IDENTITY_PREFIXES.some((prefix) => lower.startsWith(prefix))) {
      throw new MessageRuleError(
        `${field}.name`,
        `header ${JSON.stringify(name)} is not allowed: the relay sets the recipients, the sender and the message's identity itself`,
      );
    } else result.ignored.push(name);
  });
  return result;
}

function contentFormat(field: string, value: string): 'text' | 'html' {
  const type = value.split(';')[0]!.trim().toLowerCase();
  if (type === 'text/plain') return 'text';
  if (type === 'text/html') return 'html';
  throw new MessageRuleError(`${field}.value`, 'Content-Type may be text/plain or text/html; the relay builds the message itself');
}

/** `Name <address>` -> `Name`; a bare address gives no name. */
function senderName(field: string, value: string): string | undefined {
  const parsed = addressparser(value);
  const only = parsed.length === 1 ? parsed[0] : undefined;
  if (!only || 'group' in only) throw new MessageRuleError(`${field}.value`, 'From must be one sender, plain or in the form Display Name <address>');
  const name = (only.name ?? '').trim();
  if (name === '') return undefined;
  return name.length > SENDER_NAME_MAX ? name.slice(0, SENDER_NAME_MAX) : name;
}

/** The site a send is made for: its URL and host name (see keys/sites.ts); both '' for none. */
export function siteOf(siteUrl: string | undefined): { url: string; host: string } {
  if (siteUrl === undefined || siteUrl === '') return { url: '', host: '' };
  singleLine('site_url', siteUrl, MESSAGE_LIMITS.siteUrlMax);
  const host = siteHost(siteUrl);
  if (host === undefined) throw new MessageRuleError('site_url', SITE_URL_RULE);
  return { url: siteUrl, host };
}

export interface TemplateVars {
  code: string;
  expiry_min: number;
  lang?: string;
}

/** Template variables with their types and bounds: a code of digits, an expiry of 1-60 minutes. */
export function checkTemplateVars(vars: unknown): TemplateVars {
  const v = (vars ?? {}) as Record<string, unknown>;
  if (typeof v.code !== 'string' || !MESSAGE_LIMITS.codePattern.test(v.code)) {
    throw new MessageRuleError('template_vars.code', 'template_vars.code must be 4 to 10 digits');
  }
  const expiry = v.expiry_min;
  if (typeof expiry !== 'number' || !Number.isInteger(expiry) || expiry < MESSAGE_LIMITS.expiryMin || expiry > MESSAGE_LIMITS.expiryMax) {
    throw new MessageRuleError('template_vars.expiry_min', `template_vars.expiry_min must be a whole number of minutes from ${MESSAGE_LIMITS.expiryMin} to ${MESSAGE_LIMITS.expiryMax}`);
  }
  // Any two-letter language (a region is ignored); one the template lacks falls back to English.
  if (v.lang !== undefined && (typeof v.lang !== 'string' || !/^[A-Za-z]{2}([_-][A-Za-z]{2})?$/.test(v.lang))) {
    throw new MessageRuleError('template_vars.lang', 'template_vars.lang must be a two-letter language code such as en or de');
  }
  return { code: v.code, expiry_min: expiry, lang: v.lang as string | undefined };
}

/** Number types that can receive a 2FA SMS; premium-rate, shared-cost, toll-free, UAN, voicemail … cannot. */
const SMS_NUMBER_TYPES: ReadonlySet<NumberType> = new Set<NumberType>(['MOBILE', 'FIXED_LINE_OR_MOBILE']);

/**
 * A phone number an SMS may go to: valid E.164, of a type that receives SMS, in one of the
 * allowed countries. Returns the number in E.164.
 */
export function checkPhone(field: string, text: string, countries: ReadonlySet<string>): string {
  singleLine(field, text, 16);
  const phone = /^\+[1-9][0-9]{6,14}$/.test(text) ? parsePhoneNumberFromString(text) : undefined;
  if (!phone || !phone.isValid()) throw new MessageRuleError(field, `${text} is not a valid E.164 phone number`);
  if (!phone.country || !countries.has(phone.country)) {
    throw new MessageRuleError(field, `SMS to ${phone.country ?? 'this destination'} are not supported by this relay.`, 'country_not_supported');
  }
  const type = phone.getType();
  if (!type || !SMS_NUMBER_TYPES.has(type)) {
    const kind = type ? type.toLowerCase().replace(/_/g, '-') : 'unknown';
    throw new MessageRuleError(
      field,
      `${phone.number} is a ${kind} number; 2FA SMS go to mobile numbers only.`,
      'number_type_not_supported',
    );
  }
  return phone.number;
}
