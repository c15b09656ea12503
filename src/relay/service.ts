import { createHash } from 'node:crypto';
import addressparser from 'nodemailer/lib/addressparser';
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import type { components } from '../../generated/api.js';
import type { Clock } from '../clock.js';
import type { RelayConfig } from '../config.js';
import { transaction, type Pool, type Queryable } from '../db/pool.js';
import { ApiError } from '../http/errors.js';
import type { Caller } from '../keys/keys.js';
import { renderSmsTemplate, type SmsLanguage, type SmsTemplate } from './delivery/templates.js';
import { bundleBalance } from './ledger.js';
import { periodOf, RELAY_TIERS, type Channel, type RelayTier } from './policy.js';
import type { RelayQueue } from './queue.js';
import type { MailPayload, SmsPayload } from './worker.js';

export interface RelayLimits {
  /** Fair-use ceilings of the Enterprise tier, per month. */
  enterpriseCeiling: Record<Channel, number>;
  /** ISO country codes SMS may be sent to. */
  smsCountries: ReadonlySet<string>;
  /** Messages a recipient gets in 24 hours before each further one waits (growing). */
  recipientFree: number;
  recipientBackoffBaseSeconds: number;
  recipientBackoffMaxSeconds: number;
  /** Messages per site (or per account, without `site_url`) per UTC day. */
  siteDailyCap: number;
  /** Which channels have a transport configured; the others answer 503. */
  channels: Record<Channel, boolean>;
}

/** The relay quota block of the contract. */
export type QuotaBlock = components['schemas']['RelayQuotaBlock'];

export interface MailInput {
  recipient?: string;
  to?: string;
  subject: string;
  body_html?: string;
  body_text?: string;
  html_body?: string;
  plain_body?: string;
  reply_to?: string;
  headers?: { name: string; value: string }[];
  site_url?: string;
}

interface TemplateVars {
  code: string;
  expiry_min: number;
  lang?: SmsLanguage;
}

export interface SmsInput {
  recipient_phone?: string;
  to?: string;
  template_code?: SmsTemplate;
  template_vars?: TemplateVars;
  vars?: TemplateVars;
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
    siteDailyCap: config.siteDailyCap,
    channels: { mail: config.mail !== undefined, sms: config.sms !== undefined },
  };
}

const relayError = (status: number, code: string, message: string, retryAfter?: number) =>
  new ApiError(status, message, { code, headers: retryAfter === undefined ? undefined : { 'Retry-After': String(retryAfter) } });

const invalid = (name: string, message: string) =>
  new ApiError(422, `Invalid request: ${message}.`, { code: 'invalid_request', errors: [{ location: 'body', name, message }] });

/** The current field unless it is empty, else the earlier name of it. */
const current = <T>(value: T | undefined, earlier: T | undefined): T | undefined =>
  value !== undefined && value !== '' ? value : earlier;

const lockKey = (text: string) => createHash('sha256').update(text).digest().readBigInt64BE(0).toString();

/**
 * The relay's rules: who may send, what a send costs (the monthly inclusive quota, then the
 * bundle balance), the anti-abuse throttles, and the quota blocks. A send is validated, throttled,
 * charged, stored and queued in one transaction: a refused send changes nothing.
 */
export class RelayService {
  constructor(
    private readonly pool: Pool,
    private readonly queue: RelayQueue | undefined,
    private readonly limits: RelayLimits,
    private readonly clock: Clock,
  ) {}

  private tier(caller: Caller): RelayTier {
    const tier = RELAY_TIERS[caller.role];
    if (!tier) throw relayError(403, 'tier_forbidden', `The ${caller.role} tier is not eligible for the relay.`);
    return tier;
  }

  private inclusiveLimit(tier: RelayTier, channel: Channel): number {
    return tier.inclusive[channel] ?? this.limits.enterpriseCeiling[channel];
  }

  async block(db: Queryable, caller: Caller, channel: Channel): Promise<QuotaBlock> {
    const tier = this.tier(caller);
    const period = periodOf(this.clock.now());
    const { rows } = await db.query<{ sent: number; queued: number; failed: number; used: number }>({
      name: 'relay-block',
      text: `select count(*) filter (where m.status = 'sent')::int as sent,
                    count(*) filter (where m.status = 'queued')::int as queued,
                    count(*) filter (where m.status = 'failed')::int as failed,
                    coalesce((select inclusive_used from relay_usage u
                               where u.account_id = $1 and u.channel = $2 and u.period_start = $3), 0) as used
               from relay_messages m
              where m.account_id = $1 and m.channel = $2 and m.period_start = $3`,
      values: [caller.accountId, channel, period.start],
    });
    const counts = rows[0]!;
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
      bundle_balance: await bundleBalance(db, caller.accountId, channel),
      bundle_eligible: tier.bundleEligible,
      period_start: period.start.toISOString(),
      period_end: period.end.toISOString(),
    };
  }

  /** GET /relay-quota. */
  async quota(caller: Caller) {
    const tier = this.tier(caller);
    const [mail, sms] = await Promise.all([this.block(this.pool, caller, 'mail'), this.block(this.pool, caller, 'sms')]);
    return { tier: tier.name, role: caller.role, mail, sms, mail_bundle_balance: mail.bundle_balance, sms_bundle_balance: sms.bundle_balance };
  }

  /** POST /relay-mail. */
  async sendMail(caller: Caller, input: MailInput) {
    this.tier(caller);
    const recipient = current(input.recipient, input.to)!.toLowerCase();
    const html = current(input.body_html, input.html_body) ?? '';
    const text = current(input.body_text, input.plain_body) ?? '';
    if (html === '' && text === '') throw invalid('body_text', 'send body_html, body_text or both');
    let replyTo: string | undefined;
    if (input.reply_to) {
      const parsed = addressparser(input.reply_to);
      const single = parsed.length === 1 && 'address' in parsed[0]! ? parsed[0] : undefined;
      if (!single?.address || !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(single.address)) {
        throw invalid('reply_to', 'reply_to must be one address, plain or in the form Display Name <address>');
      }
      replyTo = input.reply_to.trim();
    }
    const payload: MailPayload = { subject: input.subject, html, text, replyTo, headers: input.headers ?? [] };
    return this.accept(caller, 'mail', recipient, input.site_url ?? '', payload);
  }

  /** POST /relay-sms. */
  async sendSms(caller: Caller, input: SmsInput) {
    this.tier(caller);
    const phoneText = current(input.recipient_phone, input.to)!;
    const phone = parsePhoneNumberFromString(phoneText);
    if (!phone || !phone.isValid()) throw invalid('recipient_phone', `${phoneText} is not a valid E.164 phone number`);
    if (!phone.country || !this.limits.smsCountries.has(phone.country)) {
      throw relayError(422, 'country_not_supported', `SMS to ${phone.country ?? 'this destination'} are not supported by this relay.`);
    }
    let text: string;
    if (input.template_code) {
      const vars = current(input.template_vars, input.vars);
      if (!vars) throw invalid('template_vars', 'template_vars (code, expiry_min) are required with template_code');
      text = renderSmsTemplate(input.template_code, vars, input.site_url ? new URL(input.site_url).hostname : undefined);
    } else if (input.message) {
      text = input.message;
    } else {
      throw invalid('message', 'send message or template_code');
    }
    const payload: SmsPayload = { text };
    return this.accept(caller, 'sms', phone.number, input.site_url ?? '', payload);
  }

  private async accept(caller: Caller, channel: Channel, recipient: string, siteUrl: string, payload: MailPayload | SmsPayload) {
    if (!this.limits.channels[channel] || !this.queue) {
      throw relayError(503, 'service_unavailable', `The ${channel === 'mail' ? 'mail' : 'SMS'} relay is not configured on this server.`);
    }
    const queue = this.queue;
    const tier = this.tier(caller);
    const now = this.clock.now();
    const period = periodOf(now);
    return transaction(this.pool, async (client) => {
      // One send at a time per recipient, per site and per account channel: the throttles and
      // the charge below see every earlier send of the same kind.
      const siteKey = siteUrl !== '' ? `site:${siteUrl}` : `account:${caller.accountId}`;
      const keys = [`recipient:${recipient}`, `${siteKey}`, `charge:${caller.accountId}:${channel}`].map(lockKey).sort();
      for (const key of keys) await client.query('select pg_advisory_xact_lock($1::bigint)', [key]);
      await this.throttle(client, caller, recipient, siteUrl, now);

      await client.query(
        `insert into relay_usage (account_id, channel, period_start) values ($1, $2, $3) on conflict do nothing`,
        [caller.accountId, channel, period.start],
      );
      const { rows } = await client.query<{ used: number }>(
        'select inclusive_used as used from relay_usage where account_id = $1 and channel = $2 and period_start = $3 for update',
        [caller.accountId, channel, period.start],
      );
      let fundedBy: 'inclusive' | 'bundle';
      if (rows[0]!.used < this.inclusiveLimit(tier, channel)) {
        fundedBy = 'inclusive';
        await client.query(
          'update relay_usage set inclusive_used = inclusive_used + 1 where account_id = $1 and channel = $2 and period_start = $3',
          [caller.accountId, channel, period.start],
        );
      } else if (!tier.bundleEligible) {
        throw relayError(402, 'monthly_cap_reached', `The monthly ${channel} cap of this tier is reached; it restarts on ${period.end.toISOString()}.`);
      } else if ((await bundleBalance(client, caller.accountId, channel)) > 0) {
        fundedBy = 'bundle';
      } else {
        throw relayError(
          402,
          'cap_reached_buy_bundle',
          `The monthly inclusive ${channel} quota is used up and the ${channel} bundle balance is empty; buy a bundle to send more.`,
        );
      }
      const { rows: inserted } = await client.query<{ id: number }>(
        `insert into relay_messages (account_id, channel, period_start, funded_by, recipient, site_url, payload, created_at)
         values ($1, $2, $3, $4, $5, $6, $7, $8) returning id`,
        [caller.accountId, channel, period.start, fundedBy, recipient, siteUrl, JSON.stringify(payload), now],
      );
      const id = inserted[0]!.id;
      if (fundedBy === 'bundle') {
        await client.query(
          `insert into bundle_ledger (account_id, channel, kind, amount, message_id, created_at)
           values ($1, $2, 'consumption', -1, $3, $4)`,
          [caller.accountId, channel, id, now],
        );
      }
      await queue.enqueue(channel, id, client);
      return { ok: true as const, queue_id: id, remaining_quota: await this.block(client, caller, channel) };
    });
  }

  /**
   * The anti-abuse throttles. A recipient gets `recipientFree` messages in 24 hours freely;
   * each further one must wait, after the previous one, a backoff that doubles each time
   * (base, 2 x base, 4 x base ... up to the maximum). A site (or an account without
   * `site_url`) sends at most `siteDailyCap` messages per UTC day.
   */
  private async throttle(db: Queryable, caller: Caller, recipient: string, siteUrl: string, now: Date): Promise<void> {
    const { rows } = await db.query<{ count: number; last: Date | null }>(
      `select count(*)::int as count, max(created_at) as last from relay_messages
        where recipient = $1 and created_at > $2`,
      [recipient, new Date(now.getTime() - 86_400_000)],
    );
    const { count, last } = rows[0]!;
    if (count >= this.limits.recipientFree && last) {
      const waitSeconds = Math.min(
        this.limits.recipientBackoffMaxSeconds,
        this.limits.recipientBackoffBaseSeconds * 2 ** (count - this.limits.recipientFree),
      );
      const retryAfter = Math.ceil((last.getTime() + waitSeconds * 1000 - now.getTime()) / 1000);
      if (retryAfter > 0) {
        throw relayError(429, 'recipient_backoff', `Too many messages to this recipient; retry in ${retryAfter} seconds.`, retryAfter);
      }
    }
    const dayStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
    const { rows: site } = await db.query<{ count: number }>(
      siteUrl !== ''
        ? 'select count(*)::int as count from relay_messages where site_url = $1 and created_at >= $2'
        : "select count(*)::int as count from relay_messages where account_id = $1::int and site_url = '' and created_at >= $2",
      [siteUrl !== '' ? siteUrl : caller.accountId, dayStart],
    );
    if (site[0]!.count >= this.limits.siteDailyCap) {
      const retryAfter = Math.ceil((dayStart.getTime() + 86_400_000 - now.getTime()) / 1000);
      throw relayError(429, 'site_daily_cap', `The daily cap of ${this.limits.siteDailyCap} messages for this site is reached.`, retryAfter);
    }
  }
}
