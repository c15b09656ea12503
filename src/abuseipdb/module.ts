import type { BlacklistService } from '../blacklist/service.js';
import type { Clock } from '../clock.js';
import type { Edge } from '../http/edge.js';
import type { ReputationService } from '../reputation/service.js';
import { abuseipdbHandlers } from './handlers.js';
import { AbuseIpdbService } from './service.js';

/** AbuseIPDB's API v2, for its clients: answered from the reputation and the blacklist. */
export function abuseipdbModule(deps: { clock: Clock; reputation: ReputationService; blacklist: BlacklistService }) {
  const service = new AbuseIpdbService(deps.reputation, deps.blacklist, deps.clock);
  return { service, handlers: ({ metering }: Edge) => abuseipdbHandlers(service, deps.blacklist, metering) };
}
