import type { components } from '../../generated/api.js';
import { before, DAY_MS, nextUtcMidnight, secondsUntil, utcDay, utcMonth, type Clock } from '../clock.js';
import type { RelayConfig } from './settings.js';
import type { Role } from '../roles.js';
import { DomainError, sentence, unprocessable, type ErrorKind } from '../errors.js';
import type { Caller } from '../keys/service.js';
import type { KeySites } from '../keys/sites.repository.js';
import { UnknownTemplateError } from './delivery/templates.js';
import { type SmsTemplates } from './delivery/templates.js';
import {
  boundedText,
  interpretHeaders,
  checkNoLink,
  checkPhone,
  checkSmsPrefix,
  checkTemplateVars,
  MESSAGE_LIMITS,
  MessageRuleError,
  parseMailbox,
  singleLine,
  siteOf,
} from './message-rules.js';
import type { Channel, RelayTier } from './policy.js';
import type { RelayQueue } from './queue.js';
import type { RecipientHistory, RelayRepository } from './repository.js';
import type { MailPayload, SmsPayload } from './worker.js';
import { brandMail, smsPrefix } from './white-label.js';

export interface RelayLimits {
  /** Fair-use ceilings of the Enterprise tier, per month. */
  enterpriseCeiling: Record<Channel, number>;
  /** ISO country codes SMS may be sent to. */
  smsCountries: ReadonlySet<string>;
  /** Messages a recipient gets from one account in 24 hours before each further one waits (growing). */
  recipientFree: number;
  recipientBackoffBaseSeconds: number;
  recipientBackoffMaxSeconds: number;
  /**
   * Messages a recipient gets from all accounts together in 24 hours before the accounts past
   * their `recipientFree` messages to it are refused (against SMS pumping); see `throttle`.
   */
  recipientGlobalDaily: number;
  /** Messages per site of an account (or per account, without `site_url`) per UTC day. */
  siteDailyCap: number;
  /** Roles that may send free-text SMS; the others must use a template. */
  smsFreeTextRoles: ReadonlySet<Role>;
  /** Which channels have a transport configured; the others answer 503. */
  channels: Record<Channel, boolean>;
  /** The service footer of Professional mails (Business and up are white-label). */
  mailFooter?: string;
}

/** The relay quota block of the contract. */
export type QuotaBlock = components['schemas']['RelayQuotaBlock'];
type QuotaAnswer = components['schemas']['RelayQuota'];

export interface MailInput {
  recipient?: string;
  to?: string;
  subject: string;
  body_html?: string;
  body_text?: string;
  html_body?: string;
  plain_body?: string;
  reply_to?: string;
  /** An array of `{name, value}` or a `{Name: value}` map (see interpretHeaders). */
  headers?: unknown;
  site_url?: string;
}

export interface SmsInput {
  recipient_phone?: string;
  to?: string;
  template_code?: string;
  template_vars?: unknown;
  vars?: unknown;
  message?: string;
  site_url?: string;
}

/** The service's limits from the configuration. */
export function relayLimits(config: RelayConfig): RelayLimits {
  return {
    enterpriseCeiling: config.enterpriseCeiling,
    smsCountries: new Set(config.smsCountries),
    recipientFree: config.recipientFree,
    recipientBackoffBaseSeconds: config.recipientBackoffBaseSeconds,
    recipientBackoffMaxSeconds: config.recipientBackoffMaxSeconds,
    recipientGlobalDaily: config.recipientGlobalDaily,
    siteDailyCap: config.siteDailyCap,
    smsFreeTextRoles: new Set(config.smsFreeTextRoles),
    channels: { mail: config.mail !== undefined, sms: config.sms !== undefined },
    mailFooter: config.mailFooter,
  };
}

const relayError = (kind: ErrorKind, code: string, message: string, retryAfter?: number) => new DomainError(kind, message, { code, retryAfter });

const invalid = (name: string, message: string, code = 'invalid_request') =>
  unprocessable(sentence(`Invalid request: ${message}`), [{ name, message }], code);

/** The relay's rules are checked here too, whatever checked the request before. */
function checked<T>(check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (err instanceof MessageRuleError) throw invalid(err.field, err.message, err.code);
    throw err;
  }
}

/** The current field unless it is empty, else the earlier name of it. */
const current = <T>(value: T | undefined, earlier: T | undefined): T | undefined =>
  value !== undefined && value !== '' ? value : earlier;

/**
 * The relay's rules: who may send, what a send costs (the monthly inclusive quota, then the
 * bundle balance), the anti-abuse throttles, and the quota blocks. A send is validated, throttled,
 * charged, stored and queued in one transaction: a refused send changes nothing.
 */
export class RelayService {
  constructor(
    private readonly messages: RelayRepository,
    private readonly queue: RelayQueue | undefined,
    private readonly limits: RelayLimits,
    private readonly clock: Clock,
    private readonly sites: KeySites,
    private readonly templates: SmsTemplates,
  ) {}

  private inclusiveLimit(tier: RelayTier, channel: Channel): number {
    return tier.inclusive[channel] ?? this.limits.enterpriseCeiling[channel];
  }

  async block(caller: Caller, tier: RelayTier, channel: Channel): Promise<QuotaBlock> {
    const period = utcMonth(this.clock.now());
    const counts = await this.messages.periodCounts(caller.accountId, channel, period.start);
    const unlimited = tier.inclusive[channel] === null;
    const limit = unlimited ? -1 : this.inclusiveLimit(tier, channel);
    return {
      sent: counts.sent,
      queued: counts.queued,
      queued_total: counts.sent + counts.queued + counts.failed,
      failed: counts.failed,
      limit,
      inclusive_limit: limit,
      inclusive_used: counts.used,
      inclusive_available: unlimited ? -1 : Math.max(0, limit - counts.used),
      bundle_balance: counts.bundleBalance,
      bundle_eligible: tier.bundleEligible,
      period_start: period.start.toISOString(),
      period_end: period.end.toISOString(),
    };
  }

  /**
   * GET /relay-quota. `tier`: the caller's relay tier, resolved once by whoever admitted the caller
   * (the API's guard refuses a role without one with 403; the dashboard asks only for one that has one).
   */
  async quota(caller: Caller, tier: RelayTier) {
    const [mail, sms] = await Promise.all([this.block(caller, tier, 'mail'), this.block(caller, tier, 'sms')]);
    // The contract names the relay tiers; the role table decides which roles have one.
    return { tier: tier.id as QuotaAnswer['tier'], role: caller.role, mail, sms, mail_bundle_balance: mail.bundle_balance, sms_bundle_balance: sms.bundle_balance };
  }

  /** POST /relay-mail. */
  async sendMail(caller: Caller, tier: RelayTier, input: MailInput) {
    const { recipient, site, payload, ignoredHeaders } = checked(() => {
      const recipientText = current(input.recipient, input.to);
      if (recipientText === undefined) throw new MessageRuleError('recipient', 'recipient is required');
      const to = parseMailbox('recipient', recipientText, MESSAGE_LIMITS.replyToMax);
      const headers = interpretHeaders(input.headers ?? []);
      let html = boundedText('body_html', current(input.body_html, input.html_body) ?? '', MESSAGE_LIMITS.bodyMax);
      let text = boundedText('body_text', current(input.body_text, input.plain_body) ?? '', MESSAGE_LIMITS.bodyMax);
      // Content-Type chooses the body: text/plain sends the text alone; text/html sends the HTML
      // (a client that put its HTML in body_text, as a Content-Type-only client may, is understood).
      if (headers.format === 'text' && text !== '') html = '';
      if (headers.format === 'html' && html === '' && text !== '') [html, text] = [text, ''];
      if (html === '' && text === '') throw new MessageRuleError('body_text', 'send body_html, body_text or both');
      const subject = singleLine('subject', input.subject ?? '', MESSAGE_LIMITS.subjectMax);
      if (subject.trim() === '') throw new MessageRuleError('subject', 'subject must not be empty');
      const replyTo = input.reply_to ? parseMailbox('reply_to', input.reply_to, MESSAGE_LIMITS.replyToMax) : headers.replyTo;
      const mail: MailPayload = {
        subject,
        html,
        text,
        toName: to.name || undefined,
        senderName: headers.senderName,
        replyTo: replyTo && (replyTo.name ? { name: replyTo.name, address: replyTo.address } : replyTo.address),
        headers: headers.custom,
      };
      return { recipient: to.address, site: siteOf(input.site_url), payload: mail, ignoredHeaders: headers.ignored };
    });
    const branded = brandMail(payload, caller.role, await this.messages.senderName(caller.accountId), this.limits.mailFooter);
    const accepted = await this.accept(caller, tier, 'mail', recipient, site, branded);
    // Said in the answer, so that a caller learns what its mail went without.
    const answer: typeof accepted & { ignored_headers?: string[] } = accepted;
    return ignoredHeaders.length > 0 ? { ...answer, ignored_headers: ignoredHeaders } : answer;
  }

  /** POST /relay-sms. */
  async sendSms(caller: Caller, tier: RelayTier, input: SmsInput) {
    const { phone, site, template, message } = checked(() => {
      const phoneText = current(input.recipient_phone, input.to);
      if (phoneText === undefined) throw new MessageRuleError('recipient_phone', 'recipient_phone is required');
      const number = checkPhone('recipient_phone', phoneText, this.limits.smsCountries);
      const siteRef = siteOf(input.site_url);
      if (input.template_code) {
        const vars = current(input.template_vars, input.vars);
        if (!vars) throw new MessageRuleError('template_vars', 'template_vars (code, expiry_min) are required with template_code');
        checkSmsPrefix('site_url', siteRef.host, 'the host name of site_url');
        return { phone: number, site: siteRef, template: { code: input.template_code, vars: checkTemplateVars(vars) }, message: undefined };
      }
      if (input.message) {
        if (!this.limits.smsFreeTextRoles.has(caller.role)) {
          throw new MessageRuleError('message', `free-text SMS are not enabled for the ${caller.role} tier on this relay; use template_code`, 'template_required');
        }
        return { phone: number, site: siteRef, template: undefined, message: checkNoLink('message', boundedText('message', input.message, MESSAGE_LIMITS.smsTextMax)) };
      }
      throw new MessageRuleError('message', 'send message or template_code');
    });
    let text = message;
    if (template) {
      try {
        text = await this.templates.render(template.code, template.vars, smsPrefix(caller.role, await this.messages.senderName(caller.accountId), site.host));
      } catch (err) {
        if (err instanceof UnknownTemplateError) throw invalid('template_code', `there is no SMS template ${template.code} on this relay`, 'unknown_template');
        throw err;
      }
    }
    const payload: SmsPayload = { text: text! };
    return this.accept(caller, tier, 'sms', phone, site, payload);
  }

  private async accept(caller: Caller, tier: RelayTier, channel: Channel, recipient: string, site: { url: string; host: string }, payload: MailPayload | SmsPayload) {
    if (!this.limits.channels[channel] || !this.queue) {
      throw relayError('unavailable', 'service_unavailable', `The ${channel === 'mail' ? 'mail' : 'SMS'} relay is not configured on this server.`);
    }
    const queue = this.queue;
    const now = this.clock.now();
    const period = utcMonth(now);
    // A refused send may try again when the next period restores the inclusive quota.
    const untilNextPeriod = secondsUntil(now, period.end);
    const untilTomorrow = secondsUntil(now, nextUtcMidnight(now));
    // The key's distinct sites of the day (a site it has today costs no I/O).
    if (site.host !== '') {
      const use = await this.sites.use(caller, site.host);
      if (!use.allowed) {
        throw relayError(
          'rate_limited',
          'site_daily_cap',
          `This key has been used for ${use.used} different sites today, the most its ${caller.role} tier allows; more sites can be used tomorrow.`,
          untilTomorrow,
        );
      }
    }
    const accepted = await this.messages.accept(
      {
        accountId: caller.accountId,
        keyId: caller.keyId,
        channel,
        periodStart: period.start,
        recipient,
        site,
        payload,
        at: now,
        siteCounter: { subject: `relay-site:${caller.accountId}:${site.host}`, day: utcDay(now), cap: this.limits.siteDailyCap },
        inclusiveLimit: this.inclusiveLimit(tier, channel),
        bundleEligible: tier.bundleEligible,
      },
      (history) => this.throttle(history, now),
      (id, db) => queue.enqueue(channel, id, db),
    );
    if ('refused' in accepted) {
      switch (accepted.refused) {
        case 'site_cap':
          throw relayError('rate_limited', 'site_daily_cap', `The daily cap of ${this.limits.siteDailyCap} messages for this site is reached.`, untilTomorrow);
        case 'monthly_cap':
          throw relayError('payment_required', 'monthly_cap_reached', `The monthly ${channel} cap of this tier is reached; it restarts on ${period.end.toISOString()}.`, untilNextPeriod);
        case 'bundle_empty':
          throw relayError(
            'payment_required',
            'cap_reached_buy_bundle',
            `The monthly inclusive ${channel} quota is used up and the ${channel} bundle balance is empty; buy a bundle to send more.`,
            untilNextPeriod,
          );
      }
    }
    const id = accepted.id;
    // Committed: this process's workers start on it now (other processes' are notified).
    queue.wake(channel);
    // The quota as it stands once this send is counted (other sends of the moment included).
    return { ok: true as const, queue_id: id, remaining_quota: await this.block(caller, tier, channel) };
  }

  /**
   * The anti-abuse throttles, each scoped so that one account cannot use them against another:
   *
   * - per account and recipient: `recipientFree` messages in 24 hours freely; each further one
   *   must wait, after the previous one, a backoff that doubles each time (base, 2 x base, ...
   *   up to the maximum);
   * - per recipient across all accounts: once the recipient has had `recipientGlobalDaily`
   *   messages in 24 hours, an account that has already sent it `recipientFree` of them is
   *   refused until the oldest of the day is 24 hours old (against SMS pumping and mail bombing
   *   through many accounts). An account's own free messages are never refused for what other
   *   accounts sent, so no tenant's volume locks another tenant's 2FA out. Bound: in any 24
   *   hours a recipient gets at most `recipientGlobalDaily` + `recipientFree` x (accounts that
   *   sent to it) messages, each account at most its free ones past the ceiling.
   *
   * Every message counts, failed ones too: each was a send the account asked for (and may have
   * reached the provider), and counting it can refuse only the account that sent it.
   *
   * The per-site daily cap (per account and site, or per account without `site_url`) and the
   * key's distinct sites per day (so that changing `site_url` on every send does not escape the
   * site cap) are charged in {@link accept}.
   */
  private throttle(history: RecipientHistory, now: Date): void {
    const { mine, last, all, oldest } = history;
    // The account's free messages to this recipient: never refused, whatever others sent.
    if (mine < this.limits.recipientFree || !last) return;
    const waitSeconds = Math.min(this.limits.recipientBackoffMaxSeconds, this.limits.recipientBackoffBaseSeconds * 2 ** (mine - this.limits.recipientFree));
    const retryAfter = Math.ceil((last.getTime() + waitSeconds * 1000 - now.getTime()) / 1000);
    if (retryAfter > 0) {
      throw relayError('rate_limited', 'recipient_backoff', `Too many messages to this recipient; retry in ${retryAfter} seconds.`, retryAfter);
    }
    // Past its free messages, an account that contributed to a recipient's ceiling is held by it.
    if (all >= this.limits.recipientGlobalDaily && oldest) {
      const retryAfter = Math.max(1, secondsUntil(now, new Date(oldest.getTime() + DAY_MS)));
      throw relayError('rate_limited', 'recipient_backoff', `This recipient has had too many messages today; retry in ${retryAfter} seconds.`, retryAfter);
    }
  }
}
