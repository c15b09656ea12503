import type { Logger } from 'pino';
import type { AccountMailer } from '../account/mailer.js';
import type { Network } from '../address.js';
import type { Clock } from '../clock.js';
import type { WebhookSettings } from './settings.js';
import { DomainError, invalidField, unprocessable, within } from '../errors.js';
import type { Caller } from '../keys/service.js';
import type { ReportListener } from '../reputation/service.js';
import { WebhookRepository, type DeliveryLogRow, type DueDelivery, type EndpointRow } from './repository.js';
import {
  ADDRESS_EVENTS,
  allowRanges,
  BATCH_MAX,
  DEFAULT_CONFIDENCE,
  DELIVERY_RETENTION_MS,
  DISABLE_AFTER_MS,
  MAX_WEBHOOKS,
  newMessageId,
  newSecret,
  retryDelay,
  sign,
  SUBSCRIBERS_FRESH_MS,
  WEBHOOK_EVENTS,
} from './rules.js';
import { SecretBox } from './secrets.js';
import { post, resolveTarget, type Attempt } from './sender.js';

export interface WebhookView {
  id: string;
  url: string;
  events: string[];
  confidence: number;
  categories: number[];
  createdAt: string;
  disabledAt: string | null;
  failingSince: string | null;
}

export interface DeliveryResult {
  id: string;
  type: string;
  delivered: boolean;
  attempts: number;
  status: number | null;
  error: string | null;
}

/** How long a claimed delivery is held by the process attempting it. */
const LEASE_MS = 60_000;
/** Addresses read per endpoint and regeneration: batches of BATCH_MAX, at most this many. */
const CHANGES_MAX = 100 * BATCH_MAX;

const view = (e: EndpointRow): WebhookView => ({
  id: e.id,
  url: e.url,
  events: e.events,
  confidence: e.confidence,
  categories: e.categories,
  createdAt: e.createdAt.toISOString(),
  disabledAt: e.disabledAt?.toISOString() ?? null,
  failingSince: e.failingSince?.toISOString() ?? null,
});

/**
 * Outbound webhooks (issue 28, item 2): the subscriptions of Business and Enterprise accounts,
 * the events made after each blacklist regeneration, and their signed delivery with retries.
 */
export class WebhookService implements ReportListener {
  private readonly ranges: Network[];
  private readonly secrets: SecretBox;
  private readonly pending = new Set<Promise<unknown>>();
  /** The accounts with an endpoint subscribed to `report.received`, as last read (performance.now() of the read). */
  private subscribers: { readAt: number; accounts: Promise<ReadonlySet<number>> } | undefined;

  constructor(
    private readonly repo: WebhookRepository,
    private readonly clock: Clock,
    private readonly mailer: AccountMailer,
    settings: WebhookSettings,
    private readonly logger: Logger,
  ) {
    this.ranges = allowRanges(settings.allowRanges);
    this.secrets = new SecretBox(settings.secretKeys ?? []);
  }

  async subscribe(caller: Caller, input: { url: string; events: string[]; confidence?: number; categories?: number[] }): Promise<WebhookView & { secret: string }> {
    const url = await this.checkedUrl(input.url);
    const events = [...new Set(input.events)];
    if (events.length === 0 || events.some((e) => !(WEBHOOK_EVENTS as readonly string[]).includes(e))) throw invalidField('events', `must name events among ${WEBHOOK_EVENTS.join(', ')}`);
    const confidence = within('confidence', input.confidence ?? DEFAULT_CONFIDENCE, 1, 100);
    const categories = [...new Set(input.categories ?? [])].sort((a, b) => a - b);
    categories.forEach((c, i) => within(`categories.${i}`, c, 1, 255));
    const secret = newSecret();
    const created = await this.repo.create(
      { accountId: caller.accountId, url: url.href, events, confidence, categories, secret: this.secrets.seal(secret), at: this.clock.now(), snapshotId: await this.repo.headSnapshot() },
      MAX_WEBHOOKS,
    );
    if (!created) throw unprocessable(`An account may hold at most ${MAX_WEBHOOKS} webhooks; delete one first.`, undefined, 'webhook_limit_reached');
    this.subscribers = undefined;
    return { ...view(created), secret };
  }

  async list(caller: Caller): Promise<WebhookView[]> {
    return (await this.repo.list(caller.accountId)).map(view);
  }

  /**
   * The dashboard's view of an account's webhooks: its subscriptions and its newest deliveries
   * (at most `limit`; kept 7 days), each with its attempts and its last answer or error.
   */
  async deliveryLog(accountId: number, limit = 100): Promise<{ endpoints: WebhookView[]; deliveries: DeliveryLogRow[] }> {
    const [endpoints, deliveries] = await Promise.all([this.repo.list(accountId), this.repo.recentDeliveries(accountId, limit)]);
    return { endpoints: endpoints.map(view), deliveries };
  }

  async remove(caller: Caller, id: string): Promise<void> {
    if (!(await this.repo.delete(caller.accountId, id))) throw notFound();
    this.subscribers = undefined;
  }

  /** Sends a `webhook.test` event now, once (never retried), and says how it went. */
  async test(caller: Caller, id: string): Promise<DeliveryResult> {
    const endpoint = await this.repo.find(caller.accountId, id);
    if (!endpoint) throw notFound();
    const msgId = newMessageId();
    const at = this.clock.now();
    const payload = { type: 'webhook.test', timestamp: at.toISOString(), data: { webhook: endpoint.id } };
    await this.repo.enqueue({ id: msgId, endpointId: endpoint.id, eventType: 'webhook.test', payload, at, due: null });
    const attempt = await this.attempt({ id: msgId, eventType: 'webhook.test', body: JSON.stringify(payload), attempts: 0, endpoint });
    if (attempt.delivered) {
      await this.repo.delivered(msgId, endpoint.id, attempt.status!, this.clock.now());
      this.subscribers = undefined; // a delivered test enables a disabled endpoint again
    } else {
      await this.repo.failed(msgId, endpoint.id, attempt, this.clock.now(), null);
    }
    return { id: msgId, type: 'webhook.test', delivered: attempt.delivered, attempts: 1, status: attempt.status, error: attempt.error };
  }

  /**
   * One pass of the dispatcher: the regeneration events of every endpoint behind the newest
   * snapshot made, then the deliveries that are due attempted. Returns how many were attempted.
   */
  async tick(): Promise<number> {
    await this.catchUp();
    let attempted = 0;
    for (;;) {
      const due = await this.repo.claimDue(this.clock.now(), LEASE_MS, 20);
      if (due.length === 0) return attempted;
      await Promise.all(due.map((d) => this.deliver(d)));
      attempted += due.length;
    }
  }

  /**
   * The events of the regenerations since each endpoint's last: per endpoint, one delivery of
   * the addresses listed, delisted or rescored under its filter (split in batches of
   * BATCH_MAX), made in the transaction that moves its cursor, so a regeneration's events are
   * stored once however many processes look.
   */
  async catchUp(): Promise<number> {
    const head = await this.repo.headSnapshot();
    if (head === null) return 0;
    let made = 0;
    for (const endpoint of await this.repo.behind(head, ADDRESS_EVENTS)) {
      await this.repo.advance(endpoint.id, endpoint.lastSnapshotId, head, async (tx) => {
        const from = endpoint.lastSnapshotId;
        if (from === null || !(await this.repo.snapshotKept(tx, from))) return;
        const changes = await this.repo.changes(tx, from, head, endpoint.confidence, endpoint.categories, CHANGES_MAX);
        const wanted = new Set(endpoint.events);
        const addresses = changes
          .map((c) => ({ ip: c.ip, event: c.score === null ? 'address.delisted' : c.previousScore === null ? 'address.listed' : 'address.score_changed', score: c.score, previousScore: c.previousScore }))
          .filter((a) => wanted.has(a.event));
        const at = this.clock.now();
        for (let i = 0; i < addresses.length; i += BATCH_MAX) {
          const batch = addresses.slice(i, i + BATCH_MAX);
          const payload = {
            type: 'blacklist.changed',
            timestamp: at.toISOString(),
            data: { snapshot: head, previousSnapshot: from, part: i / BATCH_MAX + 1, parts: Math.ceil(addresses.length / BATCH_MAX), addresses: batch },
          };
          await this.repo.enqueue({ id: newMessageId(), endpointId: endpoint.id, eventType: 'blacklist.changed', payload, at, due: at }, tx);
          made++;
        }
      });
    }
    return made;
  }

  /**
   * `report.received`: the reports an account stored, one delivery per subscribed endpoint of
   * that account (parts of at most BATCH_MAX reports), made in the background after the
   * reports' commit so that reporting never waits for it; the dispatcher sends them.
   */
  reportsStored(reports: { accountId: number; reportId: number; ip: string; categories: number[] }[]): void {
    const making = this.storeReportEvents(reports)
      .catch((err: unknown) => this.logger.error({ err: (err as Error).message }, 'report.received events could not be stored'))
      .finally(() => this.pending.delete(making));
    this.pending.add(making);
  }

  private async storeReportEvents(reports: { accountId: number; reportId: number; ip: string; categories: number[] }[]): Promise<void> {
    const subscribers = await this.reportSubscribers();
    const byAccount = new Map<number, { reportId: number; ip: string; categories: number[] }[]>();
    for (const { accountId, ...report } of reports) if (subscribers.has(accountId)) byAccount.set(accountId, [...(byAccount.get(accountId) ?? []), report]);
    const at = this.clock.now();
    for (const [accountId, list] of byAccount) {
      for (let i = 0; i < list.length; i += BATCH_MAX) {
        const payload = { type: 'report.received', timestamp: at.toISOString(), data: { reports: list.slice(i, i + BATCH_MAX) } };
        await this.repo.enqueueForAccount(accountId, 'report.received', payload, at);
      }
    }
  }

  /** The accounts subscribed to `report.received`, read again when older than SUBSCRIBERS_FRESH_MS (one read shared by the batches that ask meanwhile). */
  private reportSubscribers(): Promise<ReadonlySet<number>> {
    const now = performance.now();
    if (!this.subscribers || now - this.subscribers.readAt >= SUBSCRIBERS_FRESH_MS) {
      const read = { readAt: now, accounts: this.repo.subscribedAccounts('report.received') };
      // A failed read is not kept: the next batch reads again.
      read.accounts.catch(() => {
        if (this.subscribers === read) this.subscribers = undefined;
      });
      this.subscribers = read;
    }
    return this.subscribers.accounts;
  }

  /** Waits for the events being stored in the background (shutdown, tests). */
  async settle(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  /** Deliveries older than 7 days, deleted by the hourly purge. */
  purge(db: Parameters<WebhookRepository['purge']>[0]): Promise<number> {
    return this.repo.purge(db, new Date(this.clock.now().getTime() - DELIVERY_RETENTION_MS));
  }

  private async deliver(d: DueDelivery): Promise<void> {
    const attempt = await this.attempt(d);
    const now = this.clock.now();
    if (attempt.delivered) {
      await this.repo.delivered(d.id, d.endpoint.id, attempt.status!, now);
      return;
    }
    const delay = retryDelay(d.attempts + 1);
    const since = await this.repo.failed(d.id, d.endpoint.id, attempt, now, delay === undefined ? null : new Date(now.getTime() + delay));
    this.logger.info({ webhook: d.endpoint.id, delivery: d.id, attempts: d.attempts + 1, error: attempt.error }, 'webhook delivery failed');
    if (now.getTime() - since.getTime() >= DISABLE_AFTER_MS) {
      const disabled = await this.repo.disable(d.endpoint.id, now);
      if (disabled) {
        this.logger.warn({ webhook: d.endpoint.id }, 'webhook disabled after 24 hours of failed deliveries');
        if (disabled.email) {
          this.mailer.send({
            to: disabled.email,
            subject: 'Your webhook was disabled',
            text:
              `Deliveries to your webhook ${disabled.url} have failed for 24 hours, so it was disabled and nothing more is sent to it.\n\n` +
              `Last error: ${attempt.error ?? 'unknown'}.\n\nOnce the endpoint works again, send it a test event (POST /api/v2/webhooks/${d.endpoint.id}/test): a delivered test enables it again.\n`,
          });
        }
      }
    }
  }

  /** One signed attempt: the host resolved and checked again, the connection pinned to the checked address. */
  private async attempt(d: DueDelivery): Promise<Attempt> {
    const url = new URL(d.endpoint.url);
    const target = await resolveTarget(url, this.ranges);
    if (!target.ok) return { delivered: false, status: null, error: `refused: ${target.reason}` };
    let secret: string;
    try {
      const opened = this.secrets.open(d.endpoint.secret);
      secret = opened.secret;
      // Stored before a key was set, or with a key since rotated out of first place: sealed again now.
      if (opened.stale) await this.repo.replaceSecret(d.endpoint.id, d.endpoint.secret, this.secrets.seal(secret));
    } catch (err) {
      return { delivered: false, status: null, error: `cannot sign: ${(err as Error).message}` };
    }
    const timestamp = Math.floor(this.clock.now().getTime() / 1000);
    const headers = { 'webhook-id': d.id, 'webhook-timestamp': String(timestamp), 'webhook-signature': sign(secret, d.id, timestamp, d.body) };
    return post(url, target, headers, d.body);
  }

  private async checkedUrl(text: string): Promise<URL> {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw invalidField('url', 'must be an absolute https URL');
    }
    const target = await resolveTarget(url, this.ranges);
    if (!target.ok) throw invalidField('url', target.reason, 'webhook_url_refused');
    return url;
  }
}

const notFound = () => new DomainError('not_found', 'No webhook with this id belongs to your account.', { code: 'not_found' });
