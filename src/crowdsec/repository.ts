import type { Pool } from '../db/pool.js';

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

interface BouncerRow {
  id: number;
  name: string;
  key_prefix: string;
  confidence_minimum: number;
  categories: number[] | null;
  entry_limit: number | null;
  created_at: Date;
  last_pull_at: Date | null;
  last_snapshot_id: string | number | null;
  last_choice: BouncerChoice | null;
  last_seen_at: Date | null;
  last_ip: string | null;
  user_agent: string | null;
}

const COLUMNS = `id, name, key_prefix, confidence_minimum, categories, entry_limit, created_at, last_pull_at, last_snapshot_id, last_choice,
                 last_seen_at, last_ip, user_agent`;

const toBouncer = (row: BouncerRow): Bouncer => ({
  id: row.id,
  name: row.name,
  keyPrefix: row.key_prefix,
  confidence: row.confidence_minimum,
  categories: row.categories,
  limit: row.entry_limit,
  createdAt: row.created_at,
  lastPullAt: row.last_pull_at,
  lastSnapshotId: row.last_snapshot_id === null ? null : Number(row.last_snapshot_id),
  lastChoice: row.last_choice,
  lastSeenAt: row.last_seen_at,
  lastIp: row.last_ip,
  userAgent: row.user_agent,
});

/** What a bouncer is told to take: its list's filter. */
export interface BouncerChoice {
  confidence: number;
  categories: number[] | null;
  limit: number | null;
}

/** Every statement about bouncers. */
export class BouncerRepository {
  constructor(private readonly pool: Pool) {}

  /** Adds a bouncer; undefined when one of that name exists. */
  async add(name: string, keyHash: Buffer, keyPrefix: string, choice: BouncerChoice, at: Date): Promise<Bouncer | undefined> {
    const { rows } = await this.pool.query<BouncerRow>(
      `insert into bouncers (name, key_hash, key_prefix, confidence_minimum, categories, entry_limit, created_at)
       values ($1, $2, $3, $4, $5, $6, $7)
       on conflict (name) do nothing
       returning ${COLUMNS}`,
      [name, keyHash, keyPrefix, choice.confidence, choice.categories, choice.limit, at],
    );
    return rows[0] && toBouncer(rows[0]);
  }

  async list(): Promise<Bouncer[]> {
    const { rows } = await this.pool.query<BouncerRow>(`select ${COLUMNS} from bouncers order by name`);
    return rows.map(toBouncer);
  }

  /** Changes a bouncer's choice; undefined when there is no such bouncer. */
  async update(name: string, choice: BouncerChoice): Promise<Bouncer | undefined> {
    const { rows } = await this.pool.query<BouncerRow>(
      `update bouncers set confidence_minimum = $2, categories = $3, entry_limit = $4 where name = $1 returning ${COLUMNS}`,
      [name, choice.confidence, choice.categories, choice.limit],
    );
    return rows[0] && toBouncer(rows[0]);
  }

  async byName(name: string): Promise<Bouncer | undefined> {
    const { rows } = await this.pool.query<BouncerRow>(`select ${COLUMNS} from bouncers where name = $1`, [name]);
    return rows[0] && toBouncer(rows[0]);
  }

  async remove(name: string): Promise<boolean> {
    const { rowCount } = await this.pool.query('delete from bouncers where name = $1', [name]);
    return (rowCount ?? 0) > 0;
  }

  /** The bouncer of a key's hash, and the stored hash (for a constant-time comparison). */
  async byKeyHash(hash: Buffer): Promise<{ bouncer: Bouncer; keyHash: Buffer } | undefined> {
    const { rows } = await this.pool.query<BouncerRow & { key_hash: Buffer }>({
      name: 'bouncer-by-key',
      text: `select ${COLUMNS}, key_hash from bouncers where key_hash = $1`,
      values: [hash],
    });
    return rows[0] && { bouncer: toBouncer(rows[0]), keyHash: rows[0].key_hash };
  }

  /** A pull of the decision stream answered from this snapshot (null: there was none) with this choice. */
  async recordPull(id: number, snapshotId: number | null, choice: BouncerChoice, at: Date): Promise<void> {
    await this.pool.query({
      name: 'bouncer-pull',
      text: 'update bouncers set last_pull_at = $2, last_snapshot_id = $3, last_choice = $4, last_seen_at = $2 where id = $1',
      values: [id, at, snapshotId, JSON.stringify(choice)],
    });
  }

  /** Any request: when, from where and as what. */
  async recordSeen(id: number, at: Date, ip: string, userAgent: string | null): Promise<void> {
    await this.pool.query({
      name: 'bouncer-seen',
      text: 'update bouncers set last_seen_at = $2, last_ip = $3, user_agent = $4 where id = $1',
      values: [id, at, ip, userAgent],
    });
  }
}
