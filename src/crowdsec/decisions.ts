import { createHash } from 'node:crypto';
import type { CategoryService } from '../categories/service.js';
import type { Clock } from '../clock.js';
import { DomainError } from '../errors.js';
import { LIMIT_MAX } from '../blacklist/service.js';
import { chunked, drain, REFRESH_CYCLE_SECONDS, type BlacklistSnapshots, type Columns, type EntryRows, type PhaseRanges, type Selection } from '../blacklist/repository.js';
import { parseAddress, parseNetwork } from '../address.js';
import type { Bouncer, BouncerChoice, BouncerRepository } from './repository.js';

/**
 * The blacklist as CrowdSec decisions. Each listed address a bouncer's choice takes is one `ban`
 * of scope `Ip`, origin `trs` and scenario `trs/<category slugs>`. A pull answers what changed
 * since that bouncer's previous pull: the snapshot it answered from is remembered per bouncer,
 * and the difference between two snapshots is one query (blacklist/repository.ts).
 *
 * Decisions last one to two renewal cycles (12-24 hours) and each address is renewed once a cycle
 * at a second of its own (`refresh_phase`), sent as a deletion and a new decision in the same
 * answer: bouncers that skip an address they hold (the firewall bouncer does) still take the new
 * duration, and one that missed a deletion lets the address go within 24 hours.
 */
export const DECISION_ORIGIN = 'trs';
const CYCLE = REFRESH_CYCLE_SECONDS;

export interface Decision {
  id: number;
  origin: 'trs';
  type: 'ban';
  scope: 'Ip';
  value: string;
  duration: string;
  scenario: string;
}

export interface DecisionFilters {
  scopes?: string;
  origins?: string;
  scenarios_containing?: string;
  scenarios_not_containing?: string;
}

export interface StreamParams extends DecisionFilters {
  startup?: boolean;
}

export interface LookupParams extends Omit<DecisionFilters, 'scopes'> {
  scope?: string;
  value?: string;
  type?: string;
  ip?: string;
  range?: string;
  contains?: boolean;
}

type EntryRow = EntryRows['decision'];

const ENTRY: Columns<'decision'> = { select: 'decision' };

const seconds = (at: Date) => Math.floor(at.getTime() / 1000);
const modulo = (n: number, m: number) => ((n % m) + m) % m;

/** Go's form of a duration of whole seconds, as the LAPI writes it: `17h52m31s`, `4m0s`, `9s`. */
export function goDuration(total: number): string {
  const sign = total < 0 ? '-' : '';
  const s = Math.abs(total);
  const [h, m, sec] = [Math.floor(s / 3600), Math.floor((s % 3600) / 60), s % 60];
  return sign + (h ? `${h}h${m}m${sec}s` : m ? `${m}m${sec}s` : `${sec}s`);
}

/** The refresh phases whose renewal falls in (t0, t1] (epoch seconds). */
export function renewalPhases(t0: number, t1: number): PhaseRanges {
  if (t1 <= t0) return [];
  if (t1 - t0 >= CYCLE) return [[0, CYCLE - 1]];
  const [a, b] = [modulo(t0, CYCLE), modulo(t1, CYCLE)];
  const ranges: PhaseRanges = a < b ? [[a + 1, b]] : [[a + 1, CYCLE - 1], [0, b]];
  return ranges.filter(([lo, hi]) => lo <= hi);
}

/** The renewal cycle of an address at t: it changes at each renewal. */
const cycleOf = (t: number, phase: number) => Math.floor((t - phase) / CYCLE);

/** Seconds a decision issued at t holds: to the address's next renewal, and one cycle more. */
export function decisionSeconds(t: number, phase: number): number {
  return (modulo(phase - t, CYCLE) || CYCLE) + CYCLE;
}

/** The id of one issue of a decision (an address in one renewal cycle), the same on every process. */
function decisionId(ip: string, cycle: number): number {
  return createHash('sha256').update(`${ip}/${cycle}`).digest().readUIntBE(0, 6) + 1;
}

const slug = (name: string) => name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');

const words = (list: string | undefined) =>
  list === undefined ? undefined : list.split(',').map((w) => w.trim().toLowerCase()).filter(Boolean);

/** The filters of a request, applied to decisions as the LAPI applies them. */
class RequestFilter {
  private readonly none: boolean;
  private readonly containing: string[] | undefined;
  private readonly notContaining: string[] | undefined;

  constructor(filters: DecisionFilters & { type?: string }) {
    // Scopes default to `ip,range`; this server's decisions are all `Ip`, origin `trs`, type `ban`.
    const scopes = words(filters.scopes ?? 'ip,range')!;
    const origins = words(filters.origins);
    this.none =
      !scopes.includes('ip') ||
      (origins !== undefined && !origins.includes(DECISION_ORIGIN)) ||
      (filters.type !== undefined && filters.type.toLowerCase() !== 'ban');
    this.containing = words(filters.scenarios_containing);
    this.notContaining = words(filters.scenarios_not_containing);
  }

  /** Whether no decision of this server can pass. */
  get empty(): boolean {
    return this.none;
  }

  passes(scenario: string): boolean {
    const lower = scenario.toLowerCase();
    if (this.containing?.length && !this.containing.some((w) => lower.includes(w))) return false;
    return !this.notContaining?.some((w) => lower.includes(w));
  }
}

export class DecisionService {
  constructor(
    private readonly snapshots: BlacklistSnapshots,
    private readonly bouncers: BouncerRepository,
    private readonly categories: CategoryService,
    private readonly clock: Clock,
  ) {}

  private filterOf(choice: BouncerChoice) {
    return { minScore: choice.confidence, categories: choice.categories ?? undefined, limit: choice.limit ?? LIMIT_MAX };
  }

  /** Turns entries into decisions: issued at t (new) or as held at t (deleted). */
  private async decisions(filters: RequestFilter, t: number) {
    const names = new Map((await this.categories.list()).map((c) => [c.id, slug(c.name)]));
    const scenarioOf = (categories: number[]) => `trs/${categories.map((id) => names.get(id) || `category-${id}`).join(',')}`;
    return (row: EntryRow, deleted = false): Decision | undefined => {
      const scenario = scenarioOf(row.categories);
      if (!filters.passes(scenario)) return undefined;
      return {
        id: decisionId(row.ip, cycleOf(t, row.refreshPhase)),
        origin: DECISION_ORIGIN,
        type: 'ban',
        scope: 'Ip',
        value: row.ip,
        duration: deleted ? '0s' : goDuration(decisionSeconds(t, row.refreshPhase)),
        scenario,
      };
    };
  }

  /**
   * GET /decisions/stream for a bouncer: the JSON body, written as it is read, and what to
   * remember of this pull once the body is sent whole (`recordPull`).
   */
  async stream(bouncer: Bouncer, params: StreamParams): Promise<{ body: AsyncGenerator<string>; pull: PullRecord }> {
    const now = this.clock.now();
    const t1 = seconds(now);
    const choice: BouncerChoice = { confidence: bouncer.confidence, categories: bouncer.categories, limit: bouncer.limit };
    const head = await this.snapshots.head();
    const pull: PullRecord = { bouncerId: bouncer.id, snapshotId: head?.id ?? null, choice, at: now };
    const filters = new RequestFilter(params);
    if (!head || filters.empty) return { body: (async function* () { yield '{"new":[],"deleted":[]}'; })(), pull };

    const current = await this.snapshots.select(head, this.filterOf(choice));
    const base = bouncer.lastSnapshotId === null ? undefined : await this.snapshots.headById(bouncer.lastSnapshotId);
    const held = base && (await this.snapshots.select(base, this.filterOf(bouncer.lastChoice ?? choice)));
    const t0 = bouncer.lastPullAt ? seconds(bouncer.lastPullAt) : undefined;
    const issue = await this.decisions(filters, t1);
    const asHeld = await this.decisions(filters, t0 ?? t1);
    return { body: this.body(issue, asHeld, current, held, params.startup ? undefined : t0, t1), pull };
  }

  /** Records a pull whose answer was sent whole: the base of the bouncer's next one. */
  async recordPull(pull: PullRecord): Promise<void> {
    await this.bouncers.recordPull(pull.bouncerId, pull.snapshotId, pull.choice, pull.at);
  }

  private async *body(
    issue: (row: EntryRow, deleted?: boolean) => Decision | undefined,
    asHeld: (row: EntryRow, deleted?: boolean) => Decision | undefined,
    current: Selection,
    held: Selection | undefined,
    t0: number | undefined,
    t1: number,
  ): AsyncGenerator<string> {
    const list = (rows: Iterable<EntryRow> | AsyncIterable<EntryRow>, write: (row: EntryRow) => Decision | undefined) =>
      (async function* () {
        for await (const row of rows) {
          const decision = write(row);
          if (decision) yield decision;
        }
      })();
    let added: AsyncIterable<Decision>[];
    let deleted: AsyncIterable<Decision>[];
    // The list the bouncer holds differs from the current one in its snapshot or in its choice.
    const moved = held && (held.head.id !== current.head.id || JSON.stringify(held.filter) !== JSON.stringify(current.filter));
    const changes = moved ? await this.collect(held!, current) : { added: [], removed: [] };
    if (t0 === undefined || !held || t1 - t0 >= CYCLE) {
      // Startup, a first pull, a base no longer kept, or a bouncer away for a whole cycle: the
      // whole list as new; deleted what it held that left (renewing all it held after a cycle).
      const renewAll = held && t0 !== undefined && t1 - t0 >= CYCLE;
      added = [list(this.rows(current), (row) => issue(row))];
      deleted = renewAll ? [list(this.rows(held), (row) => asHeld(row, true))] : [list(changes.removed, (row) => asHeld(row, true))];
    } else {
      const renewed: EntryRow[] = [];
      for await (const row of drain(await this.snapshots.renewals(current, renewalPhases(t0, t1), ENTRY, moved ? held : undefined))) {
        renewed.push(row);
      }
      added = [list(changes.added, (row) => issue(row)), list(renewed, (row) => issue(row))];
      deleted = [list(changes.removed, (row) => asHeld(row, true)), list(renewed, (row) => asHeld(row, true))];
    }
    yield* jsonLists([['new', added], ['deleted', deleted]]);
  }

  /**
   * The entries of a list, its cursor opened only when reading starts: one list is read after
   * the other, never two cursors at once (the embedded database runs one at a time).
   */
  private rows(selection: Selection): AsyncIterable<EntryRow> {
    const snapshots = this.snapshots;
    return (async function* () {
      yield* drain(await snapshots.stream(selection, ENTRY));
    })();
  }

  /** The difference between two lists, held in memory (a regeneration's worth of changes). */
  private async collect(from: Selection, to: Selection) {
    const out = { added: [] as EntryRow[], removed: [] as EntryRow[] };
    for await (const row of drain(await this.snapshots.changes(from, to, ENTRY))) out[row.change].push(row);
    return out;
  }

  /**
   * GET /decisions: the current decisions about an address or range (`contains`: the decisions
   * covering it whole; else those inside it), or all of them; undefined for none (the LAPI
   * answers `null`).
   */
  async lookup(bouncer: Bouncer, params: LookupParams): Promise<{ found: Decision[] } | { all: AsyncGenerator<string> }> {
    const t = seconds(this.clock.now());
    const filters = new RequestFilter({ ...params, scopes: params.scope });
    const head = await this.snapshots.head();
    const target = this.target(params);
    if (!head || filters.empty || target === null) return { found: [] };
    const selection = await this.snapshots.select(head, this.filterOf({ confidence: bouncer.confidence, categories: bouncer.categories, limit: bouncer.limit }));
    const issue = await this.decisions(filters, t);
    if (target === undefined) {
      return { all: jsonArrayOrNull((async function* (rows: AsyncIterable<EntryRow>) {
        for await (const row of rows) {
          const decision = issue(row);
          if (decision) yield decision;
        }
      })(this.rows(selection))) };
    }
    // An Ip decision covers a range whole only when the range is one address.
    const single = target.first === target.last;
    if (!single && params.contains !== false) return { found: [] };
    const rows = await this.snapshots.within(selection, target.first, target.last, ENTRY);
    return { found: rows.map((row) => issue(row)).filter((d): d is Decision => d !== undefined) };
  }

  /** The address or range asked about; undefined: none (all decisions); null: one no decision can match. */
  private target(params: LookupParams): { first: string; last: string } | undefined | null {
    const address = (text: string, name: string) => {
      const parsed = parseAddress(text.trim());
      if (!parsed || text.trim() !== text) throw invalid(name, text, 'an IPv4 or IPv6 address');
      return { first: parsed.text, last: parsed.text };
    };
    const network = (text: string, name: string) => {
      const parsed = text.includes('/') ? parseNetwork(text, { prefixRequired: true }) : undefined;
      if (!parsed) return address(text, name);
      return { first: parsed.firstAddress, last: parsed.lastAddress };
    };
    if (params.ip !== undefined) return address(params.ip, 'ip');
    if (params.range !== undefined) return network(params.range, 'range');
    if (params.value === undefined) return undefined;
    // `value` is compared with decisions' values, as text: an address matches its Ip decision.
    const parsed = parseAddress(params.value.trim());
    return parsed && parsed.text === params.value.trim() ? { first: parsed.text, last: parsed.text } : null;
  }
}

export interface PullRecord {
  bouncerId: number;
  snapshotId: number | null;
  choice: BouncerChoice;
  at: Date;
}

const invalid = (name: string, value: string, what: string) =>
  new DomainError('invalid_input', `'${value}' is not ${what} (${name}).`, { code: 'invalid_request', fields: [{
    name,
    message: `must be ${what}`,
  }] });

/** `{"new":[…],"deleted":[…]}` written decision by decision, in chunks. */
function jsonLists(lists: [string, AsyncIterable<Decision>[]][]): AsyncGenerator<string> {
  return chunked(
    (async function* () {
      yield '{';
      for (const [i, [name, parts]] of lists.entries()) {
        yield `${i ? ',' : ''}"${name}":[`;
        let first = true;
        for (const part of parts) {
          for await (const decision of part) {
            yield (first ? '' : ',') + JSON.stringify(decision);
            first = false;
          }
        }
        yield ']';
      }
      yield '}';
    })(),
  );
}

/** A JSON array written as it is read, or `null` when empty (as the LAPI answers). */
function jsonArrayOrNull(decisions: AsyncIterable<Decision>): AsyncGenerator<string> {
  return chunked(
    (async function* () {
      let any = false;
      for await (const decision of decisions) {
        yield (any ? ',' : '[') + JSON.stringify(decision);
        any = true;
      }
      yield any ? ']' : 'null';
    })(),
  );
}
