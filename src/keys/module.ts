import { KeyLastUsed } from './last-used.repository.js';
import type { Clock } from '../clock.js';
import type { Orm } from '../db/orm.js';
import type { Pool } from '../db/pool.js';
import type { PublicLimits } from '../roles.js';
import { keyHandlers } from './handlers.js';
import type { KeySettings } from './settings.js';
import { KeyAuthenticator, KeyService } from './service.js';
import { KeySites } from './sites.repository.js';
import { Meter } from './usage.repository.js';

/**
 * The keys: who a key is (the authenticator and its cache), what it may spend (the meter: quotas,
 * balances, the public allowance), the sites it is used from, when it was last used (the
 * dashboard's "last used", told of each authentication).
 */
export function keysModule(deps: {
  orm: Orm;
  pool: Pool;
  clock: Clock;
  settings: KeySettings;
  /** The public allowance of callers without a key (the HTTP edge's setting). */
  publicLimits: PublicLimits;
}) {
  const { orm, pool, clock, settings } = deps;
  const meter = new Meter(pool, clock, deps.publicLimits, settings.quotaSynchronousCommit);
  const sites = new KeySites(pool, clock);
  const lastUsed = new KeyLastUsed(orm.em, clock);
  return {
    meter,
    sites,
    keys: new KeyService(orm.em, clock),
    authenticator: new KeyAuthenticator(pool, settings.keyCacheMs, clock, (keyId) => lastUsed.touch(keyId)),
    handlers: () => keyHandlers(meter, sites, clock),
  };
}
