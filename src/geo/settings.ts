import { z } from 'zod';

/**
 * Geolocation's settings slice (MaxMind-format databases in place of the bundled data): its
 * variables (merged into the configuration's one schema by src/config.ts, which reads and checks
 * the environment once) and what the area is handed. A settings slice imports nothing of its
 * area (.dependency-cruiser.cjs).
 */

/** Its environment variables (docs/configuration.md). */
export const geoVariables = {
  GEOIP_COUNTRY_DB: z.string().min(1).optional(),
  GEOIP_ASN_DB: z.string().min(1).optional(),
};

type Env = z.infer<z.ZodObject<typeof geoVariables>>;

export interface GeoSettings {
  /** MaxMind-format databases that replace the bundled geolocation data. */
  geoip: { countryDb?: string; asnDb?: string };
}

export function geoSettings(e: Env): GeoSettings {
  return { geoip: { countryDb: e.GEOIP_COUNTRY_DB, asnDb: e.GEOIP_ASN_DB } };
}
