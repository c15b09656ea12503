import type { Clock } from '../clock.js';
import type { Orm } from '../db/orm.js';
import { categoryHandlers } from './handlers.js';
import { CategoryService } from './service.js';

/** The threat-category catalogue: the specification's 30, the web set, the operator's own. */
export function categoriesModule({ orm, clock }: { orm: Orm; clock: Clock }) {
  const service = new CategoryService(orm.em, clock);
  return { service, handlers: () => categoryHandlers(service) };
}
