import { z } from 'zod';

/**
 * The blacklist's settings slice (its regeneration, the snapshots kept, the rendered lists' cache,
 * the DNS blocklist file): its variables (merged into the configuration's one schema by
 * src/config.ts, which reads and checks the environment once) and what the blacklist is handed.
 * A settings slice imports nothing of its area (.dependency-cruiser.cjs).
 */

/** The blacklist's environment variables (docs/configuration.md). */
export const blacklistVariables = {
  BLACKLIST_INTERVAL_MINUTES: z.coerce.number().min(1).max(1440).default(15),
  BLACKLIST_HISTORY: z.coerce.number().int().min(1).max(672).default(8),
  BLACKLIST_CACHE_MB: z.coerce.number().min(0).max(4096).default(32),
  DNSBL_FILE: z.string().min(1).optional(),
  DNSBL_ZONE: z
    .string()
    .regex(/^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\.?$/i, 'must be a DNS zone name such as bl.example.com')
    .optional(),
  DNSBL_CONFIDENCE: z.coerce.number().int().min(0).max(100).default(90),
};

type BlacklistEnv = z.infer<z.ZodObject<typeof blacklistVariables>>;

export interface BlacklistSettings {
  /** How often the blacklist snapshot is regenerated. */
  blacklistIntervalMs: number;
  /** Earlier snapshots kept beside the current one, for deltas (`since`) and bouncers' pulls. */
  blacklistHistory: number;
  /** Bytes of rendered lists a process keeps to answer repeated polls (0: render every time). */
  blacklistCacheBytes: number;
  /**
   * The DNS blocklist file each process rewrites (atomically) when the snapshot changed
   * (DNSBL_FILE; unset: none), its zone for the SOA (DNSBL_ZONE) and its confidence (DNSBL_CONFIDENCE, 90).
   */
  dnsbl: { file: string | undefined; zone: string | undefined; confidence: number };
}

export function blacklistSettings(e: BlacklistEnv): BlacklistSettings {
  return {
    blacklistIntervalMs: e.BLACKLIST_INTERVAL_MINUTES * 60_000,
    blacklistHistory: e.BLACKLIST_HISTORY,
    blacklistCacheBytes: Math.round(e.BLACKLIST_CACHE_MB * 1024 * 1024),
    dnsbl: { file: e.DNSBL_FILE, zone: e.DNSBL_ZONE?.replace(/\.$/, '').toLowerCase(), confidence: e.DNSBL_CONFIDENCE },
  };
}
