import { EntitySchema, OptionalProps, PrimaryKeyProp } from '@mikro-orm/core';
import type { ApiKey } from '../entities.js';

/** The daily counters (`usage_counters_counter_check`). */
export const USAGE_COUNTERS = ['check', 'report', 'feedback', 'public', 'faults', 'relay_site'] as const;
export type UsageCounterName = (typeof USAGE_COUNTERS)[number];

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
  checks: [
    { name: 'usage_counters_used_check', expression: "(used >= 0)" },
  ],
  properties: {
    subject: { type: 'text', primary: true },
    counter: { type: 'text', primary: true, enum: true, items: [...USAGE_COUNTERS] },
    day: { type: 'string', columnType: 'date', primary: true },
    used: { type: 'integer' },
  },
});

export const KeySiteEntity = new EntitySchema<KeySite>({
  name: 'KeySite',
  tableName: 'key_sites',
  indexes: [
    { name: 'key_sites_day_idx', properties: ['day'] },
    { name: 'key_sites_refused_idx', expression: "CREATE UNIQUE INDEX key_sites_refused_idx ON key_sites USING btree (key_id, day) WHERE refused" },
  ],
  checks: [
    { name: 'key_sites_refusals_check', expression: "(refusals >= 0)" },
    { name: 'key_sites_site_check', expression: "((length(site) >= 1) AND (length(site) <= 253))" },
  ],
  properties: {
    key: { kind: 'm:1', entity: 'ApiKey', fieldName: 'key_id', primary: true, deleteRule: 'cascade', updateRule: 'no action' },
    day: { type: 'string', columnType: 'date', primary: true },
    site: { type: 'text', primary: true },
    firstSeen: { type: 'Date', fieldName: 'first_seen' },
    refused: { type: 'boolean', default: false },
    refusals: { type: 'integer', default: 0 },
  },
});

export const keysEntities = [UsageCounterEntity, KeySiteEntity];
