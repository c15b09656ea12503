import { DAY_MS, before, secondsUntil, type Clock } from '../clock.js';
import { parseAddress } from '../address.js';
import { normaliseEmail } from '../account/accounts.js';
import type { AccountMailer } from '../account/mailer.js';
import type { Actor } from '../audit/trail.js';
import type { DelistingSettings } from './settings.js';
import { DELIST_STATUSES, type DelistStatus } from '../db/entities/delisting.js';
import { DomainError, invalidField, sentence, unprocessable } from '../errors.js';
import type { DelistRepository, DelistRow } from './repository.js';
import type { EvidenceRecord } from '../reputation/repository.js';
import {
  CONFIRM_WINDOW_MS,
  DELIST_DAYS_MAX,
  MAIL_WINDOW_MS,
  REJECTION_COOLDOWN_MS,
  SOURCE_WINDOW_MS,
  isProven,
  newToken,
  provenSentence,
  requesterNetwork,
  shownRange,
  statusSentence,
  tokenMatches,
  validateDelistInput,
  validateNote,
  type DelistInput,
} from './rules.js';

/** What the requester sees of a request (no e-mail, no reason: the link may be forwarded). */
export interface DelistView {
  id: string;
  ip: string;
  status: DelistStatus;
  proven: boolean;
  createdAt: string;
  confirmedAt: string | null;
  decidedAt: string | null;
  whitelistUntil: string | null;
  message: string;
}

/** What the operator sees: everything but the token. */
export interface DelistReview extends DelistView {
  email: string;
  reason: string;
  note: string;
  decidedBy: string | null;
  /**
   * The private evidence of the newest reports about the address (every reporter's, redacted as
   * stored), for the operator deciding: given when the review asks for it (`list`'s `evidence`).
   */
  evidence?: { total: number; reports: EvidenceRecord[] };
}

/** The reports' private evidence about an address, newest first, at most `limit` (reputation/repository.ts). */
export type EvidenceReader = (ip: string, limit: number) => Promise<{ total: number; reports: EvidenceRecord[] }>;

/** What the reporters of an address see of its latest decision on GET /reports/{ip}. */
export interface DelistingDecision {
  status: 'approved' | 'rejected';
  range: string;
  decidedAt: string;
  whitelistUntil: string | null;
}

/** Who acts: the API or the page for a requester; the CLI or an operator's account for a decision. */
export interface DelistActor {
  actor: Actor;
  ip?: string;
  accountId?: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/**
 * Delisting and appeals: anyone may ask for an address or range to be reviewed; the request is
 * proven when made from the address itself; the requester confirms through a mailed link; the
 * operator approves (the address is whitelisted for N days and leaves the next snapshot) or
 * rejects (the address may not ask again for 7 days). Every step is in the audit trail. Mail is
 * bounded: one link per address per day, DELIST_MAILS_PER_RECIPIENT_DAILY per recipient, and
 * DELIST_REQUESTS_PER_SOURCE_DAILY requests per source.
 */
export class DelistService {
  constructor(
    private readonly repository: DelistRepository,
    private readonly clock: Clock,
    private readonly mailer: AccountMailer,
    private readonly settings: DelistingSettings,
    /** The origin of the links in mails (PUBLIC_URL), read when a mail is made. */
    private readonly publicUrl: () => string | undefined,
    /** The reports' evidence, shown with a request under review. */
    private readonly evidenceOf?: EvidenceReader,
  ) {}

  /** POST /delist-requests and the /delist page. */
  async request(input: DelistInput, callerIp: string, by: DelistActor): Promise<DelistView> {
    const valid = validateDelistInput(input, normaliseEmail);
    const now = this.clock.now();
    const caller = parseAddress(callerIp);
    const source = caller ? requesterNetwork(caller) : callerIp;
    if ((await this.repository.countFromSource(source, before(now, SOURCE_WINDOW_MS))) >= this.settings.requestsPerSourceDaily) {
      throw new DomainError('rate_limited', `At most ${this.settings.requestsPerSourceDaily} delisting requests a day may be made from one address (or IPv6 /64).`, {
        code: 'delist_requests_exhausted',
        retryAfter: Math.ceil(SOURCE_WINDOW_MS / 1000),
      });
    }
    const range = valid.network.text;
    const rejected = await this.repository.lastRejection(range, before(now, REJECTION_COOLDOWN_MS));
    if (rejected) {
      const until = new Date(rejected.getTime() + REJECTION_COOLDOWN_MS);
      throw new DomainError('rate_limited', `A request for ${shownRange(range)} was rejected on ${rejected.toISOString()}; it may be asked for again from ${until.toISOString()}.`, {
        code: 'delist_recently_rejected',
        retryAfter: secondsUntil(now, until),
      });
    }
    const proven = isProven(valid.network, caller);
    const { token, hash } = newToken();
    const row = await this.repository.create(
      { ip: range, email: valid.email, reason: valid.reason, proven, tokenHash: hash, requesterNetwork: source, at: now, staleBefore: before(now, CONFIRM_WINDOW_MS) },
      { accountId: null, actor: by.actor, ip: by.ip ?? callerIp },
    );
    if (!row) {
      const message = `A request for ${shownRange(range)} is already waiting for confirmation or review; only one may be open at a time.`;
      throw unprocessable(message, [{ name: 'ip', message }], 'delist_request_open');
    }
    // The link goes out once per address a day and within the recipient's bound; the answer is
    // the same either way, so that it tells nothing of other requests.
    if (this.mailer.configured && (await this.repository.claimMail(row.id, now, before(now, MAIL_WINDOW_MS), this.settings.mailsPerRecipientDaily))) {
      this.mailer.send({ to: row.email, subject: `Confirm your delisting request for ${shownRange(row.ip)}`, text: this.confirmationText(row, token) });
    }
    return { ...this.view(row), message: `${provenSentence(proven, shownRange(row.ip))} A confirmation link is mailed to the address given (at most one a day per address listed).` };
  }

  /**
   * GET /delist-requests/{id}?token=… and the page the mailed link opens: the status, and the
   * confirmation of an unconfirmed request. A wrong id or token is not found, alike.
   */
  async status(id: string, token: string, by: DelistActor): Promise<DelistView> {
    const found = UUID.test(id) ? await this.repository.find(id) : undefined;
    if (!found || !tokenMatches(token, found.tokenHash)) throw new DomainError('not_found', 'No delisting request with this id and token.', { code: 'not_found' });
    if (found.status !== 'unconfirmed') return this.view(found);
    const now = this.clock.now();
    const confirmed = await this.repository.confirm(id, now, before(now, CONFIRM_WINDOW_MS), { accountId: null, actor: by.actor, ip: by.ip });
    return this.view(confirmed ?? (await this.repository.find(id))!);
  }

  /** `trs delist list` and the dashboard: by status (all but expired by default), proven first. */
  /**
   * The requests for review, proven first, then oldest. `evidence`: with each request still to
   * decide (unconfirmed or open), the evidence of the newest reports about its address, at most
   * that many.
   */
  async list(status?: string, limit = 500, options: { evidence?: number } = {}): Promise<DelistReview[]> {
    if (status !== undefined && !(DELIST_STATUSES as readonly string[]).includes(status)) {
      throw invalidField('status', `must be one of ${DELIST_STATUSES.join(', ')}`);
    }
    const statuses = status ? [status as DelistStatus] : DELIST_STATUSES.filter((s) => s !== 'expired');
    const reviews = (await this.repository.list(statuses, limit)).map((row) => this.review(row));
    const evidenceOf = this.evidenceOf;
    if (!options.evidence || !evidenceOf) return reviews;
    const wanted = options.evidence;
    return Promise.all(
      reviews.map(async (r) => (r.status === 'open' || r.status === 'unconfirmed' ? { ...r, evidence: await evidenceOf(r.ip, wanted) } : r)),
    );
  }

  /** Approves an open request: whitelisted for `days` (DELIST_DAYS by default), the requester told. */
  async approve(id: string, options: { days?: number; note?: string }, by: DelistActor): Promise<DelistReview> {
    const days = options.days ?? this.settings.defaultDays;
    if (!Number.isInteger(days) || days < 1 || days > DELIST_DAYS_MAX) throw invalidField('days', `must be an integer from 1 to ${DELIST_DAYS_MAX}`);
    const note = validateNote(options.note, false);
    const now = this.clock.now();
    const row = await this.decide(id, { status: 'approved', note, at: now, until: new Date(now.getTime() + days * DAY_MS) }, ['open'], by);
    this.tell(row, `Your delisting request for ${shownRange(row.ip)} was approved.`, [
      `The address is whitelisted until ${row.whitelistUntil!.toISOString()}: it leaves the blacklist, and the firewalls that pull it, at the next regeneration (within minutes).`,
      ...(note ? [`The operator's note: ${note}`] : []),
    ]);
    return this.review(row);
  }

  /** Rejects an open (or unconfirmed) request, with a note; the address may not ask again for 7 days. */
  async reject(id: string, options: { note?: string }, by: DelistActor): Promise<DelistReview> {
    const note = validateNote(options.note, true);
    const row = await this.decide(id, { status: 'rejected', note, at: this.clock.now() }, ['open', 'unconfirmed'], by);
    this.tell(row, `Your delisting request for ${shownRange(row.ip)} was rejected.`, [
      `The operator's note: ${note}`,
      'A new request for this address may be made 7 days after this decision.',
    ]);
    return this.review(row);
  }

  /** The latest decision on a request covering `ip`, for the reporters of the address. */
  async decisionFor(ip: string): Promise<DelistingDecision | undefined> {
    const row = await this.repository.latestDecision(ip);
    if (!row || (row.status !== 'approved' && row.status !== 'rejected')) return undefined;
    return { status: row.status, range: row.ip, decidedAt: row.decidedAt!.toISOString(), whitelistUntil: iso(row.whitelistUntil) };
  }

  private async decide(
    id: string,
    decision: { status: 'approved' | 'rejected'; note: string; at: Date; until?: Date },
    from: DelistStatus[],
    by: DelistActor,
  ): Promise<DelistRow> {
    if (!UUID.test(id)) throw new DomainError('not_found', `No delisting request ${id}.`, { code: 'not_found' });
    const decidedBy = by.accountId === undefined ? by.actor : `account:${by.accountId}`;
    const row = await this.repository.decide(id, { ...decision, by: decidedBy, audit: { accountId: by.accountId ?? null, actor: by.actor, ip: by.ip } }, from);
    if (row) return row;
    const found = await this.repository.find(id);
    if (!found) throw new DomainError('not_found', `No delisting request ${id}.`, { code: 'not_found' });
    throw unprocessable(sentence(`Request ${id} is ${found.status}: only ${from.join(' or ')} requests can be ${decision.status}`), undefined, 'delist_not_decidable');
  }

  /** Mails the decision, only to a requester who confirmed the address by its link (no mail to an unconfirmed stranger's choice). */
  private tell(row: DelistRow, first: string, more: string[]): void {
    if (!this.mailer.configured || !row.confirmedAt) return;
    this.mailer.send({
      to: row.email,
      subject: `Delisting request for ${shownRange(row.ip)}: ${row.status}`,
      text: [first, '', ...more, '', `Request ${row.id}.`].join('\n'),
    });
  }

  private confirmationText(row: DelistRow, token: string): string {
    const link = `${this.publicUrl() ?? ''}/delist/${row.id}?token=${token}`;
    return [
      `Someone (we hope you) asked for ${shownRange(row.ip)} to be reviewed for removal from the blacklist.`,
      '',
      'To confirm the request, open this link within 24 hours; it also shows where the request stands:',
      `  ${link}`,
      '',
      row.proven
        ? 'The request was made from the address itself, so it is reviewed first.'
        : 'The request was not made from the address itself; the operator reviews it after the proven ones.',
      '',
      'If you did not ask for this, ignore this mail: nothing happens without the confirmation.',
    ].join('\n');
  }

  private view(row: DelistRow): DelistView {
    return {
      id: row.id,
      ip: shownRange(row.ip),
      status: row.status,
      proven: row.proven,
      createdAt: row.createdAt.toISOString(),
      confirmedAt: iso(row.confirmedAt),
      decidedAt: iso(row.decidedAt),
      whitelistUntil: iso(row.whitelistUntil),
      message: statusSentence(row.status, row.whitelistUntil),
    };
  }

  private review(row: DelistRow): DelistReview {
    return { ...this.view(row), email: row.email, reason: row.reason, note: row.note, decidedBy: row.decidedBy };
  }
}
