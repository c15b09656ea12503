import { z } from 'zod';
import { boolean } from '../settings.js';

/**
 * The keys' settings slice (the key cache, the quota charge's commit): its variables (merged into
 * the configuration's one schema by src/config.ts, which reads and checks the environment once)
 * and what the area is handed. A settings slice imports nothing of its area
 * (.dependency-cruiser.cjs).
 */

/** Its environment variables (docs/configuration.md). */
export const keyVariables = {
  KEY_CACHE_SECONDS: z.coerce.number().min(0).max(300).default(10),
  QUOTA_SYNCHRONOUS_COMMIT: boolean.default(false),
};

type Env = z.infer<z.ZodObject<typeof keyVariables>>;

export interface KeySettings {
  /** How long a process trusts a key lookup: a revocation reaches every process within it. */
  keyCacheMs: number;
  /** QUOTA_SYNCHRONOUS_COMMIT: a standalone charge of a daily counter waits for the WAL flush (keys/usage.repository.ts ASYNC_COMMIT). */
  quotaSynchronousCommit: boolean;
}

export function keySettings(e: Env): KeySettings {
  return { keyCacheMs: e.KEY_CACHE_SECONDS * 1000, quotaSynchronousCommit: e.QUOTA_SYNCHRONOUS_COMMIT };
}
