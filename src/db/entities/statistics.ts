import { EntitySchema, OptionalProps, PrimaryKeyProp } from '@mikro-orm/core';
import { bigintNumber } from './types.js';

// Rollups maintained as reports arrive, so that statistics never scan the reports.

/** Report submissions and newly reported addresses per UTC hour and category; category 0 counts all. */
export interface ActivityHour {
  [PrimaryKeyProp]?: ['hour', 'category'];
  [OptionalProps]?: 'reports' | 'newIps';
  hour: Date;
  category: number;
  reports: number;
  newIps: number;
}

/** Report submissions and newly reported addresses per UTC day and category; category 0 counts all. */
export interface ActivityDay {
  [PrimaryKeyProp]?: ['day', 'category'];
  [OptionalProps]?: 'reports' | 'newIps';
  day: Date;
  category: number;
  reports: number;
  newIps: number;
}

/** All-time report submissions and newly reported addresses per category; category 0 counts all. */
export interface CategoryTotal {
  [PrimaryKeyProp]?: 'category';
  [OptionalProps]?: 'reports' | 'newIps';
  category: number;
  reports: number;
  newIps: number;
}

/** Reported addresses and submissions per country of the reported address. */
export interface CountryTotal {
  [PrimaryKeyProp]?: 'countryCode';
  [OptionalProps]?: 'ips' | 'reports';
  countryCode: string;
  ips: number;
  reports: number;
}

/** Cross-country connections per hour: the reported address's country to the reporter's. */
export interface ConnectionsHour {
  [PrimaryKeyProp]?: ['hour', 'sourceCountry', 'targetCountry'];
  [OptionalProps]?: 'reports' | 'scoreSum';
  hour: Date;
  sourceCountry: string;
  targetCountry: string;
  reports: number;
  scoreSum: number;
}

export const ActivityHourEntity = new EntitySchema<ActivityHour>({
  name: 'ActivityHour',
  tableName: 'activity_hourly',
  indexes: [
    { name: 'activity_hourly_category_hour_idx', expression: "CREATE INDEX activity_hourly_category_hour_idx ON activity_hourly USING btree (category, hour) INCLUDE (reports, new_ips)" },
  ],
  properties: {
    hour: { type: 'Date', primary: true },
    category: { type: 'smallint', primary: true },
    reports: { type: 'integer', default: 0 },
    newIps: { type: 'integer', fieldName: 'new_ips', default: 0 },
  },
});

export const ActivityDayEntity = new EntitySchema<ActivityDay>({
  name: 'ActivityDay',
  tableName: 'activity_daily',
  properties: {
    day: { type: 'Date', primary: true },
    category: { type: 'smallint', primary: true },
    reports: { type: 'integer', default: 0 },
    newIps: { type: 'integer', fieldName: 'new_ips', default: 0 },
  },
});

export const CategoryTotalEntity = new EntitySchema<CategoryTotal>({
  name: 'CategoryTotal',
  tableName: 'category_totals',
  properties: {
    category: { type: 'smallint', primary: true, autoincrement: false },
    reports: { type: bigintNumber(), default: 0 },
    newIps: { type: bigintNumber(), fieldName: 'new_ips', default: 0 },
  },
});

export const CountryTotalEntity = new EntitySchema<CountryTotal>({
  name: 'CountryTotal',
  tableName: 'country_totals',
  properties: {
    countryCode: { type: 'text', fieldName: 'country_code', primary: true },
    ips: { type: 'integer', default: 0 },
    reports: { type: bigintNumber(), default: 0 },
  },
});

export const ConnectionsHourEntity = new EntitySchema<ConnectionsHour>({
  name: 'ConnectionsHour',
  tableName: 'connections_hourly',
  properties: {
    hour: { type: 'Date', primary: true },
    sourceCountry: { type: 'text', fieldName: 'source_country', primary: true },
    targetCountry: { type: 'text', fieldName: 'target_country', primary: true },
    reports: { type: 'integer', default: 0 },
    scoreSum: { type: bigintNumber(), fieldName: 'score_sum', default: 0 },
  },
});

export const statisticsEntities = [ActivityHourEntity, ActivityDayEntity, CategoryTotalEntity, CountryTotalEntity, ConnectionsHourEntity];
