import { z } from 'zod';

/**
 * Outbound webhooks' settings slice: their variables (merged into the configuration's one schema
 * by src/config.ts, which reads and checks the environment once) and what the webhook service is
 * handed. A settings slice imports nothing of its area (.dependency-cruiser.cjs).
 */

/** The outbound webhooks' environment variables (docs/configuration.md, docs/webhooks.md). */
export const webhookVariables = {
  // Outbound webhooks (src/webhooks, docs/webhooks.md): CIDRs a webhook URL may resolve into though not public.
  WEBHOOK_ALLOW_RANGES: z.string().max(2_000).optional(),
  // Keys sealing webhook signing secrets at rest (src/webhooks/secrets.ts): base64 of 32 bytes each, the first seals.
  WEBHOOK_SECRETS_KEY: z
    .string()
    .regex(/^[A-Za-z0-9+/]{43}=(,[A-Za-z0-9+/]{43}=)*$/, 'must be one or more comma-separated keys, each the base64 of 32 bytes (openssl rand -base64 32)')
    .optional(),
};

type WebhookEnv = z.infer<z.ZodObject<typeof webhookVariables>>;

/** Outbound webhooks (src/webhooks). */
export interface WebhookSettings {
  /**
   * WEBHOOK_ALLOW_RANGES: networks (CIDR) a webhook's host may resolve into although they are
   * not public (an operator's own receivers; the tests' local receiver). A host inside them may
   * also be reached over plain http.
   */
  allowRanges: string[];
  /**
   * WEBHOOK_SECRETS_KEY: keys that seal the signing secrets at rest (AES-256-GCM), the first
   * sealing and every one opening (rotation); none: the secrets are stored in clear.
   */
  secretKeys?: Buffer[];
}

export function webhookSettings(e: WebhookEnv): WebhookSettings {
  return {
    allowRanges: (e.WEBHOOK_ALLOW_RANGES ?? '').split(',').map((r) => r.trim()).filter(Boolean),
    secretKeys: (e.WEBHOOK_SECRETS_KEY ?? '').split(',').filter(Boolean).map((k) => Buffer.from(k, 'base64')),
  };
}
