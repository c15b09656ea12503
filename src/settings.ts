import { z } from 'zod';

/**
 * What the settings slices share (src/config.ts and each area's settings.ts): how a boolean and a
 * provider's API origin are written in the environment, and how a missing variable is named.
 */

export const boolean = z
  .enum(['true', 'false', '1', '0'])
  .transform((value) => value === 'true' || value === '1');

/**
 * A provider's API origin (and optional path prefix) in place of its default: a region's
 * endpoint, a proxy, a test fake. Credentials go there, so plain http only on loopback.
 */
export const apiBase = z
  .string()
  .regex(
    /^(https:\/\/[^/?#@]+|http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?)(\/[^?#]*)?$/,
    'must be an https:// URL without query (http:// only on loopback)',
  )
  .transform((url) => url.replace(/\/+$/, ''))
  .optional();

/** Pushes `NAME: required when …` for each variable that is not set. */
export function requireAll(problems: string[], when: string, variables: Record<string, string | undefined>): void {
  for (const [name, value] of Object.entries(variables)) if (!value) problems.push(`  ${name}: required when ${when}`);
}
