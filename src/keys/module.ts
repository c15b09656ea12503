import { KeyLastUsed } from '../account/last-used.repository.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Orm } from '../db/orm.js';
import type { Pool } from '../db/pool.js';
import { keyHandlers } from './handlers.js';
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
  config: Pick<Config, 'publicLimits' | 'quotaSynchronousCommit' | 'keyCacheMs'>;
}) {
  const { orm, pool, clock, config } = deps;
  const meter = new Meter(pool, clock, config.publicLimits, config.quotaSynchronousCommit);
  const sites = new KeySites(pool, clock);
  const lastUsed = new KeyLastUsed(orm.em, clock);
  return {
    meter,
    sites,
    keys: new KeyService(orm.em, clock),
    authenticator: new KeyAuthenticator(pool, config.keyCacheMs, clock, (keyId) => lastUsed.touch(keyId)),
    handlers: () => keyHandlers(meter, sites, clock),
  };
}
