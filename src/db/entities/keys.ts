import { EntitySchema, OptionalProps, PrimaryKeyProp } from '@mikro-orm/core';
import type { ApiKey } from '../entities.js';

/** The daily counters (`usage_counters_counter_check`). */
export type UsageCounterName = 'check' | 'report' | 'feedback' | 'public' | 'faults' | 'relay_site';

/**
 * A daily usage counter of a subject (an account `a:<id>`, a public source `ip:<addr>`, a relay
 * site `relay-site:<account>:<site>`). Charged by `charge_counters()`, all subjects or none.
 */
export interface UsageCounter {
  [PrimaryKeyProp]?: ['subject', 'counter', 'day'];
  subject: string;
  counter: UsageCounterName;
  /** The UTC day, `YYYY-MM-DD`. */
  day: string;
  used: number;
}

/** A site a key was used from, or refused for (past its role's sites a day), per UTC day. */
export interface KeySite {
  [PrimaryKeyProp]?: ['key', 'day', 'site'];
  [OptionalProps]?: 'refused';
  key: ApiKey;
  /** The UTC day, `YYYY-MM-DD`. */
  day: string;
  site: string;
  firstSeen: Date;
  refused: boolean;
}

export const UsageCounterEntity = new EntitySchema<UsageCounter>({
  name: 'UsageCounter',
  tableName: 'usage_counters',
  properties: {
    subject: { type: 'text', primary: true },
    counter: { type: 'text', primary: true },
    day: { type: 'string', columnType: 'date', primary: true },
    used: { type: 'integer' },
  },
});

export const KeySiteEntity = new EntitySchema<KeySite>({
  name: 'KeySite',
  tableName: 'key_sites',
  properties: {
    key: { kind: 'm:1', entity: 'ApiKey', fieldName: 'key_id', primary: true, deleteRule: 'cascade' },
    day: { type: 'string', columnType: 'date', primary: true },
    site: { type: 'text', primary: true },
    firstSeen: { type: 'Date', fieldName: 'first_seen' },
    refused: { type: 'boolean', default: false },
  },
});

export const keysEntities = [UsageCounterEntity, KeySiteEntity];
