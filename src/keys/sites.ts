import { before, DAY_MS, utcDay } from '../clock.js';
import { DomainError } from '../errors.js';
import type { Caller } from './service.js';

/** The longest host name DNS allows; a URL with a longer one names no site. */
export const SITE_HOST_MAX = 253;

/** What a `site_url` must be, for the services that refuse one that is not (422). */
export const SITE_URL_RULE = `site_url must be an absolute http or https URL whose host name has at most ${SITE_HOST_MAX} characters`;

/** The days of sites key_sites keeps: the dashboard shows the last 30 days; older rows are purged. */
export const KEY_SITES_DAYS = 30;

/** The first day of sites the dashboard shows at `now` (`YYYY-MM-DD`); older days are purged. */
export const firstShownSiteDay = (now: Date): string => utcDay(before(now, KEY_SITES_DAYS * DAY_MS));

/**
 * The site a request is made for, from a URL (`X-Rip-Site`, `site_url`): its host name in
 * lower case without `www.`, so that every spelling of one site counts once; undefined when
 * the text is not an absolute http(s) URL or its host name is longer than DNS allows.
 */
export function siteHost(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if ((parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.hostname === '') return undefined;
  if (parsed.hostname.length > SITE_HOST_MAX) return undefined;
  return parsed.hostname.toLowerCase().replace(/^www\./, '');
}

export interface SiteUse {
  /** The site was taken (known today, or new and within the limit). */
  allowed: boolean;
  /** Distinct sites the key was taken for today, this one included when it was taken. */
  used: number;
  /** -1: unlimited. */
  limit: number;
}

/** The refusal of a new site past the key's limit (403 `domain_limit_exceeded`). */
export function siteRefused(caller: Caller, site: string, use: SiteUse): DomainError {
  return new DomainError(
    'forbidden',
    `This key has been used from ${use.used} sites today, the most its ${caller.role} role allows; ${site} was not taken. More sites can be used tomorrow (UTC).`,
    { code: 'domain_limit_exceeded' },
  );
}


