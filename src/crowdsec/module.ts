import type { BlacklistSnapshots } from '../blacklist/repository.js';
import type { CategoryService } from '../categories/service.js';
import type { Clock } from '../clock.js';
import type { Orm } from '../db/orm.js';
import { Bouncers } from './bouncers.js';
import { DecisionService } from './decisions.js';
import { bouncerGuard, crowdsecHandlers } from './handlers.js';
import { BouncerRepository } from './repository.js';

/**
 * CrowdSec's Local API for bouncers: the bouncers (a key each, with its choice of list) and the
 * decisions they pull from the blacklist's snapshots. `guard` authenticates a bouncer on the
 * protocol's routes.
 */
export function crowdsecModule(deps: { orm: Orm; clock: Clock; categories: CategoryService; snapshots: BlacklistSnapshots }) {
  const repository = new BouncerRepository(deps.orm.em);
  const bouncers = new Bouncers(repository, deps.categories, deps.clock);
  const decisions = new DecisionService(deps.snapshots, repository, deps.categories, deps.clock);
  return { bouncers, decisions, guard: () => bouncerGuard(bouncers), handlers: () => crowdsecHandlers(decisions) };
}
