import type { Metering } from './metering.js';

/**
 * What the edge hands an area's module when it asks for the area's handlers: the request-scoped
 * pieces the edge owns (the charge of the operations whose handlers meter themselves).
 */
export interface Edge {
  metering: Metering;
}
