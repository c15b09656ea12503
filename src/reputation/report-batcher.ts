import type { ReportBatching } from './settings.js';
import type { Queryable } from '../db/pool.js';
import { QuotaExceeded, type Payer, type Quota, type Usage } from '../keys/quota.js';
import type { NewReport, Reporter, StoredReport } from './repository.js';

/** How long POST /report's group commit gathers reports, and how many it writes at most at once. */
export type { ReportBatching } from './settings.js';

export type BatchedReport = NewReport & { reporter: Reporter };

/** Writes reports in one transaction, running `afterWrite` (the charges) last in it (ReputationRepository.store). */
export type StoreReports = (reports: BatchedReport[], afterWrite: (client: Queryable) => Promise<void>) => Promise<StoredReport[]>;
/** A member's answer: its report as stored, and its counter after its charge (none when uncharged). */
export interface Written {
  stored: StoredReport;
  usage?: Usage;
}

interface Waiting {
  report: BatchedReport;
  /** Who pays for the report (one unit); none for a report nobody is charged for. */
  payer: Payer | undefined;
  /** The counter after the member's charge in the transaction that wrote it. */
  usage?: Usage;
  /** Refused (429) already, or written: never written again. */
  answered: boolean;
  resolve(written: Written): void;
  reject(err: unknown): void;
}

/**
 * Batches one process writes at once. While they are written the next one gathers every report
 * that arrives, so that batches grow with the load instead of queueing on the same rows (the
 * reporters' counter rows, the hour's rollups).
 */
const IN_FLIGHT = 2;

/** Thrown inside a batch's transaction to roll it back: some of its members' charges were refused. */
class Refused extends Error {
  constructor(readonly refusals: Map<Waiting, unknown>) {
    super('charges refused');
  }
}

/**
 * POST /report's group commit: the reports that arrive within `ms` of each other (at most `max`)
 * are written in one transaction, with as many statements as one report takes, and charged in
 * one statement. Each request still gets the truth about its own report:
 *
 * - its charge is exact: the batch charges its members in order, in one statement
 *   (Quota.chargeMany), each admitted only while its counter stays within the limit; when some
 *   are refused, their promise rejects with the refusal (QuotaExceeded, with the counter) and the
 *   batch is rolled back and written again without them (the charge runs last, as for one
 *   report); the admitted ones resolve with their counter's Usage, which the edge makes headers
 *   of. Nothing here knows of HTTP;
 * - two reports of one reporter about one address in a batch aggregate as they would one after
 *   the other (ReputationRepository.store), each answered with the report it ended in;
 * - when the batch fails, each member is written again on its own, and fails (or succeeds) alone.
 *
 * `close()` writes what is gathered and waits for the batches under way: the server's stop.
 */
export class ReportBatcher {
  private gathered: Waiting[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly writing = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly store: StoreReports,
    private readonly quota: Quota | undefined,
    private readonly options: ReportBatching,
  ) {}

  /** Writes a report (and charges `payer` one unit) with the others gathered with it. */
  submit(report: BatchedReport, payer: Payer | undefined): Promise<Written> {
    if (payer && !this.quota) throw new Error('a charged report needs the quota');
    return new Promise<Written>((resolve, reject) => {
      const member: Waiting = {
        report,
        payer,
        answered: false,
        resolve(written) {
          member.answered = true;
          resolve(written);
        },
        reject(err) {
          member.answered = true;
          reject(err);
        },
      };
      if (this.options.ms <= 0 || this.options.max <= 1) return this.start([member]);
      this.gathered.push(member);
      if (this.closed || this.gathered.length >= this.options.max) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.options.ms);
    });
  }

  /** Writes what is gathered now, and resolves once every batch is written (those started meanwhile too). */
  async close(): Promise<void> {
    this.closed = true;
    this.flush();
    while (this.writing.size) await Promise.all(this.writing);
  }

  /**
   * Starts a batch of what is gathered (at most `max`), unless IN_FLIGHT batches are being
   * written: then the first of them to end starts it, with all that arrived meanwhile.
   */
  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.gathered.length && this.writing.size < IN_FLIGHT) this.start(this.gathered.splice(0, this.options.max));
  }

  private start(batch: Waiting[]): void {
    const done: Promise<void> = this.write(batch).finally(() => {
      this.writing.delete(done);
      this.flush();
    });
    this.writing.add(done);
  }

  private async write(batch: Waiting[]): Promise<void> {
    try {
      await this.attempt(batch);
    } catch (err) {
      // Whatever failed the batch (one member's report, a deadlock, the database), each member not
      // answered yet (not refused its charge) is answered for itself: written alone, or failed
      // with its own error.
      const unanswered = batch.filter((member) => !member.answered);
      if (unanswered.length === 1) return unanswered[0]!.reject(err);
      await Promise.all(unanswered.map((member) => this.attempt([member]).catch((e: unknown) => member.reject(e))));
    }
  }

  /** Writes the members and answers them; throws what failed the transaction, leaving them unanswered. */
  private async attempt(members: Waiting[]): Promise<void> {
    let stored: StoredReport[];
    try {
      stored = await this.store(
        members.map((m) => m.report),
        async (client) => {
          const refusals = await this.charge(members, client);
          if (refusals.size) throw new Refused(refusals);
        },
      );
    } catch (err) {
      if (!(err instanceof Refused)) throw err;
      for (const [member, refusal] of err.refusals) member.reject(refusal);
      const admitted = members.filter((m) => !err.refusals.has(m));
      return admitted.length ? this.attempt(admitted) : undefined;
    }
    members.forEach((member, i) => member.resolve({ stored: stored[i]!, usage: member.usage }));
  }

  /**
   * Charges each member one unit in the batch's transaction, in one statement and in their
   * order. Returns the refused members with their refusal; the admitted keep their Usage.
   */
  private async charge(members: Waiting[], client: Queryable): Promise<Map<Waiting, unknown>> {
    const refusals = new Map<Waiting, unknown>();
    const paying = members.filter((m) => m.payer !== undefined);
    if (!paying.length) return refusals;
    const outcomes = await this.quota!.chargeMany(paying.map((m) => ({ payer: m.payer!, units: 1 })), client);
    paying.forEach((member, i) => {
      const outcome = outcomes[i]!;
      if (outcome.refused) refusals.set(member, new QuotaExceeded(outcome.usage));
      else member.usage = outcome;
    });
    return refusals;
  }
}
