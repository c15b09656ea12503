import type { Clock } from '../clock.js';
import type { Queryable } from '../db/pool.js';

/** Keys a process remembers having written; past it, it forgets them all and writes again. */
const REMEMBERED_MAX = 50_000;

/**
 * When each key was last used, for the dashboard, without a write per request: a process writes
 * a key's `last_used_at` at most once per `resolutionMs` (5 minutes), in the background and
 * outside the request's work, so the hot path pays one Map lookup. The dashboard says "last
 * used" to within that resolution.
 */
export class KeyLastUsed {
  private readonly written = new Map<string, number>();

  constructor(
    private readonly db: Queryable,
    private readonly clock: Clock,
    private readonly resolutionMs = 5 * 60_000,
  ) {}

  touch(keyId: string): void {
    const now = this.clock.now().getTime();
    const last = this.written.get(keyId);
    if (last !== undefined && now - last < this.resolutionMs) return;
    if (this.written.size >= REMEMBERED_MAX) this.written.clear();
    this.written.set(keyId, now);
    this.db
      .query('update api_keys set last_used_at = $2 where id = $1 and (last_used_at is null or last_used_at < $2)', [keyId, new Date(now)])
      .catch(() => this.written.delete(keyId));
  }
}
