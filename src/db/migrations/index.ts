import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261121000000Init } from './Migration20261121000000Init.js';
import { Migration20261121000100UsageCounters } from './Migration20261121000100UsageCounters.js';
import { Migration20261121000200Reputation } from './Migration20261121000200Reputation.js';
import { Migration20261121000300Statistics } from './Migration20261121000300Statistics.js';
import { Migration20261121000400Relay } from './Migration20261121000400Relay.js';
import { Migration20261122000000StatsIndexes } from './Migration20261122000000StatsIndexes.js';
import { Migration20261123000000SecurityScopes } from './Migration20261123000000SecurityScopes.js';
import { Migration20261123010000FieldClients } from './Migration20261123010000FieldClients.js';
import { Migration20261124000000Accounts } from './Migration20261124000000Accounts.js';
import { Migration20261125000000RelayDelivery } from './Migration20261125000000RelayDelivery.js';
import { Migration20261126000000KeySiteAttempts } from './Migration20261126000000KeySiteAttempts.js';
import { Migration20261126000050Enforcement } from './Migration20261126000050Enforcement.js';
import { Migration20261126000100FeedbackCounter } from './Migration20261126000100FeedbackCounter.js';
import { Migration20261126100000BundlePurchases } from './Migration20261126100000BundlePurchases.js';
import { Migration20261126110000SessionFlash } from './Migration20261126110000SessionFlash.js';
import { Migration20261126120000SenderNameBound } from './Migration20261126120000SenderNameBound.js';
import { Migration20261127000000DailyRollups } from './Migration20261127000000DailyRollups.js';
import { Migration20261128000000CheckoutSessions } from './Migration20261128000000CheckoutSessions.js';
import { Migration20261128000100BundleDisputes } from './Migration20261128000100BundleDisputes.js';
import { Migration20261128010000KeySiteRefusals } from './Migration20261128010000KeySiteRefusals.js';
import { Migration20261128010100RelayPayloadRetention } from './Migration20261128010100RelayPayloadRetention.js';

/** Every committed migration, in order. A new migration is added here as well as written. */
export const migrationsList: MigrationObject[] = [
  { name: 'Migration20261121000000Init', class: Migration20261121000000Init },
  { name: 'Migration20261121000100UsageCounters', class: Migration20261121000100UsageCounters },
  { name: 'Migration20261121000200Reputation', class: Migration20261121000200Reputation },
  { name: 'Migration20261121000300Statistics', class: Migration20261121000300Statistics },
  { name: 'Migration20261121000400Relay', class: Migration20261121000400Relay },
  { name: 'Migration20261122000000StatsIndexes', class: Migration20261122000000StatsIndexes },
  { name: 'Migration20261123000000SecurityScopes', class: Migration20261123000000SecurityScopes },
  { name: 'Migration20261123010000FieldClients', class: Migration20261123010000FieldClients },
  { name: 'Migration20261124000000Accounts', class: Migration20261124000000Accounts },
  { name: 'Migration20261125000000RelayDelivery', class: Migration20261125000000RelayDelivery },
  { name: 'Migration20261126000000KeySiteAttempts', class: Migration20261126000000KeySiteAttempts },
  { name: 'Migration20261126000050Enforcement', class: Migration20261126000050Enforcement },
  { name: 'Migration20261126000100FeedbackCounter', class: Migration20261126000100FeedbackCounter },
  { name: 'Migration20261126100000BundlePurchases', class: Migration20261126100000BundlePurchases },
  { name: 'Migration20261126110000SessionFlash', class: Migration20261126110000SessionFlash },
  { name: 'Migration20261126120000SenderNameBound', class: Migration20261126120000SenderNameBound },
  { name: 'Migration20261127000000DailyRollups', class: Migration20261127000000DailyRollups },
  { name: 'Migration20261128000000CheckoutSessions', class: Migration20261128000000CheckoutSessions },
  { name: 'Migration20261128000100BundleDisputes', class: Migration20261128000100BundleDisputes },
  { name: 'Migration20261128010000KeySiteRefusals', class: Migration20261128010000KeySiteRefusals },
  { name: 'Migration20261128010100RelayPayloadRetention', class: Migration20261128010100RelayPayloadRetention },
];
