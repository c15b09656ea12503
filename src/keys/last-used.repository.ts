import type { Clock } from '../clock.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiKeyEntity } from '../db/entities.js';

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
    private readonly em: EntityManager,
    private readonly clock: Clock,
    private readonly resolutionMs = 5 * 60_000,
  ) {}

  touch(keyId: string): void {
    const now = this.clock.now().getTime();
    const last = this.written.get(keyId);
    if (last !== undefined && now - last < this.resolutionMs) return;
    if (this.written.size >= REMEMBERED_MAX) this.written.clear();
    this.written.set(keyId, now);
    const at = new Date(now);
    this.em
      .fork()
      .nativeUpdate(ApiKeyEntity, { id: keyId, $or: [{ lastUsedAt: null }, { lastUsedAt: { $lt: at } }] }, { lastUsedAt: at })
      .catch(() => this.written.delete(keyId));
  }
}
