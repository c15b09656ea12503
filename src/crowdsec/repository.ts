import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { BouncerEntity, type Bouncer as BouncerRow } from '../db/entities/blacklist.js';

/** A bouncer as the operator made it, with what it last did. Its key is never kept. */
export interface Bouncer {
  id: number;
  name: string;
  /** The first characters of its key (`trsb_` and 8 more), to tell keys apart. */
  keyPrefix: string;
  /** The lowest abuse confidence score it blocks. */
  confidence: number;
  /** Only addresses reported with one of these threat categories; null: all. */
  categories: number[] | null;
  /** At most this many addresses, highest scores first; null: all. */
  limit: number | null;
  createdAt: Date;
  /** Its last pull of the decision stream and the snapshot that pull answered from. */
  lastPullAt: Date | null;
  lastSnapshotId: number | null;
  /** The choice that pull answered with (the operator may have changed it since). */
  lastChoice: BouncerChoice | null;
  /** Its last request of any kind, from where and as what (`crowdsec-firewall-bouncer/v0.0.25`). */
  lastSeenAt: Date | null;
  lastIp: string | null;
  userAgent: string | null;
}

const toBouncer = (row: BouncerRow): Bouncer => ({
  id: row.id,
  name: row.name,
  keyPrefix: row.keyPrefix,
  confidence: row.confidenceMinimum,
  categories: row.categories,
  limit: row.entryLimit,
  createdAt: row.createdAt,
  lastPullAt: row.lastPullAt,
  lastSnapshotId: row.lastSnapshotId,
  lastChoice: row.lastChoice as BouncerChoice | null,
  lastSeenAt: row.lastSeenAt,
  lastIp: row.lastIp,
  userAgent: row.userAgent,
});

/** What a bouncer is told to take: its list's filter. */
export interface BouncerChoice {
  confidence: number;
  categories: number[] | null;
  limit: number | null;
}

/** The bouncers the operator made (bouncers), over their entity. */
export class BouncerRepository {
  constructor(private readonly em: EntityManager) {}

  /** Adds a bouncer; undefined when one of that name exists. */
  async add(name: string, keyHash: Buffer, keyPrefix: string, choice: BouncerChoice, at: Date): Promise<Bouncer | undefined> {
    const em = this.em.fork();
    const row = em.create(BouncerEntity, {
      name,
      keyHash,
      keyPrefix,
      confidenceMinimum: choice.confidence,
      categories: choice.categories,
      entryLimit: choice.limit,
      createdAt: at,
      lastPullAt: null,
      lastSnapshotId: null,
      lastChoice: null,
      lastSeenAt: null,
      lastIp: null,
      userAgent: null,
    });
    try {
      await em.flush();
    } catch (err) {
      if (err instanceof UniqueConstraintViolationException && (await this.byName(name))) return undefined;
      throw err;
    }
    return toBouncer(row);
  }

  async list(): Promise<Bouncer[]> {
    return (await this.em.fork().find(BouncerEntity, {}, { orderBy: { name: 'asc' } })).map(toBouncer);
  }

  /** Changes a bouncer's choice; undefined when there is no such bouncer. */
  async update(name: string, choice: BouncerChoice): Promise<Bouncer | undefined> {
    const em = this.em.fork();
    const row = await em.findOne(BouncerEntity, { name });
    if (!row) return undefined;
    Object.assign(row, { confidenceMinimum: choice.confidence, categories: choice.categories, entryLimit: choice.limit });
    await em.flush();
    return toBouncer(row);
  }

  async byName(name: string): Promise<Bouncer | undefined> {
    const row = await this.em.fork().findOne(BouncerEntity, { name });
    return row ? toBouncer(row) : undefined;
  }

  async remove(name: string): Promise<boolean> {
    return (await this.em.fork().nativeDelete(BouncerEntity, { name })) > 0;
  }

  /** The bouncer of a key's hash, and the stored hash (for a constant-time comparison). */
  async byKeyHash(hash: Buffer): Promise<{ bouncer: Bouncer; keyHash: Buffer } | undefined> {
    const row = await this.em.fork().findOne(BouncerEntity, { keyHash: hash });
    return row ? { bouncer: toBouncer(row), keyHash: row.keyHash } : undefined;
  }

  /** A pull of the decision stream answered from this snapshot (null: there was none) with this choice. */
  async recordPull(id: number, snapshotId: number | null, choice: BouncerChoice, at: Date): Promise<void> {
    await this.em.fork().nativeUpdate(BouncerEntity, { id }, { lastPullAt: at, lastSnapshotId: snapshotId, lastChoice: { ...choice }, lastSeenAt: at });
  }

  /** Any request: when, from where and as what. */
  async recordSeen(id: number, at: Date, ip: string, userAgent: string | null): Promise<void> {
    await this.em.fork().nativeUpdate(BouncerEntity, { id }, { lastSeenAt: at, lastIp: ip, userAgent });
  }
}
