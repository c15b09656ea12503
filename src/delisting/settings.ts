import { z } from 'zod';

/**
 * Delisting's settings slice: its variables (merged into the configuration's one schema by
 * src/config.ts, which reads and checks the environment once) and what the delisting service is
 * handed. A settings slice imports nothing of its area (.dependency-cruiser.cjs).
 */

/** Delisting's environment variables (docs/configuration.md, docs/delisting.md). */
export const delistingVariables = {
  DELIST_REQUESTS_PER_SOURCE_DAILY: z.coerce.number().int().min(1).max(1_000).default(5),
  DELIST_MAILS_PER_RECIPIENT_DAILY: z.coerce.number().int().min(1).max(100).default(3),
  DELIST_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
  DELIST_OPERATOR_EMAILS: z.string().max(2_000).optional(),
};

type DelistingEnv = z.infer<z.ZodObject<typeof delistingVariables>>;

/** Delisting requests (src/delisting): their bounds, the default approval, who reviews on the dashboard. */
export interface DelistingSettings {
  /** Requests one source (address, IPv6 /64) may make in 24 hours (DELIST_REQUESTS_PER_SOURCE_DAILY). */
  requestsPerSourceDaily: number;
  /** Confirmation mails one recipient may receive in 24 hours (DELIST_MAILS_PER_RECIPIENT_DAILY). */
  mailsPerRecipientDaily: number;
  /** How long an approval whitelists the address when the operator names no time (DELIST_DAYS). */
  defaultDays: number;
  /** The accounts (by confirmed address) that review requests on the dashboard (DELIST_OPERATOR_EMAILS). */
  operatorEmails: string[];
}

export function delistingSettings(e: DelistingEnv): DelistingSettings {
  return {
    requestsPerSourceDaily: e.DELIST_REQUESTS_PER_SOURCE_DAILY,
    mailsPerRecipientDaily: e.DELIST_MAILS_PER_RECIPIENT_DAILY,
    defaultDays: e.DELIST_DAYS,
    operatorEmails: (e.DELIST_OPERATOR_EMAILS ?? '').split(',').map((m) => m.trim().toLowerCase()).filter(Boolean),
  };
}
