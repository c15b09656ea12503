import { z } from 'zod';

/**
 * The reputation's settings slice (the report group commit, report retention): its variables
 * (merged into the configuration's one schema by src/config.ts, which reads and checks the
 * environment once) and what the reputation service and the partitions' job are handed. A
 * settings slice imports nothing of its area (.dependency-cruiser.cjs).
 */

/** The reputation's environment variables (docs/configuration.md). */
export const reputationVariables = {
  REPORT_BATCH_MS: z.coerce.number().min(0).max(1000).default(3),
  REPORT_BATCH_MAX: z.coerce.number().int().min(1).max(1000).default(100),
  // At least 365: the longest history clients ask for (maxAgeInDays) stays whole.
  REPORT_RETENTION_DAYS: z.coerce.number().int().min(365, 'must be at least 365 (the longest maxAgeInDays a client may ask for)').max(36500).default(365),
};

type ReputationEnv = z.infer<z.ZodObject<typeof reputationVariables>>;

/** POST /report's group commit (REPORT_BATCH_MS, REPORT_BATCH_MAX; reputation/report-batcher.ts). */
export interface ReportBatching {
  /** 0 writes each report at once, on its own. */
  ms: number;
  /** 1 writes each report at once, on its own, too. */
  max: number;
}

export interface ReputationSettings {
  /** POST /report's group commit: reports gathered this long (0: each on its own), at most `max` per transaction. */
  reportBatching: ReportBatching;
  /**
   * Reports are kept at least this long (REPORT_RETENTION_DAYS, 365), then dropped with their
   * month's partition, and every address's aggregate is recomputed without them.
   */
  reportRetentionMs: number;
}

export function reputationSettings(e: ReputationEnv): ReputationSettings {
  return { reportBatching: { ms: e.REPORT_BATCH_MS, max: e.REPORT_BATCH_MAX }, reportRetentionMs: e.REPORT_RETENTION_DAYS * 86_400_000 };
}
