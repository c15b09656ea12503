import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261121000000Init } from './Migration20261121000000Init.js';
import { Migration20261121000100UsageCounters } from './Migration20261121000100UsageCounters.js';
import { Migration20261121000200Reputation } from './Migration20261121000200Reputation.js';
import { Migration20261121000300Statistics } from './Migration20261121000300Statistics.js';
import { Migration20261121000400Relay } from './Migration20261121000400Relay.js';
import { Migration20261122000000StatsIndexes } from './Migration20261122000000StatsIndexes.js';

/** Every committed migration, in order. A new migration is added here as well as written. */
export const migrationsList: MigrationObject[] = [
  { name: 'Migration20261121000000Init', class: Migration20261121000000Init },
  { name: 'Migration20261121000100UsageCounters', class: Migration20261121000100UsageCounters },
  { name: 'Migration20261121000200Reputation', class: Migration20261121000200Reputation },
  { name: 'Migration20261121000300Statistics', class: Migration20261121000300Statistics },
  { name: 'Migration20261121000400Relay', class: Migration20261121000400Relay },
  { name: 'Migration20261122000000StatsIndexes', class: Migration20261122000000StatsIndexes },
];
