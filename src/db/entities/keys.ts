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

/**
 * A site (host name, at most 253 characters) a key was used from per UTC day; or, once per key
 * and day, the first site it was refused for (past its role's sites a day), which counts the
 * day's refused requests.
 */
export interface KeySite {
  [PrimaryKeyProp]?: ['key', 'day', 'site'];
  [OptionalProps]?: 'refused' | 'refusals';
  key: ApiKey;
  /** The UTC day, `YYYY-MM-DD`. */
  day: string;
  site: string;
  firstSeen: Date;
  refused: boolean;
  /** On the key's refused row of the day: the requests refused for a new site that day. */
  refusals: number;
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
    refusals: { type: 'integer', default: 0 },
  },
});

export const keysEntities = [UsageCounterEntity, KeySiteEntity];
