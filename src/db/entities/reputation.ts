import { EntitySchema, OptionalProps, PrimaryKeyProp } from '@mikro-orm/core';
import type { Account } from '../entities.js';
import { bigintNumber, numberArray } from './types.js';
import type { Role } from '../../roles.js';

/**
 * A report (table `reports`, partitioned by month of `reported_at`: the primary key holds the
 * partition key, as PostgreSQL requires). Addresses are canonical text (IPv4 dotted quad, IPv6
 * RFC 5952), so a prefix search is a range scan.
 */
export interface Report {
  [PrimaryKeyProp]?: ['id', 'reportedAt'];
  [OptionalProps]?: 'comment' | 'aggregationCount' | 'reporterCountry' | 'evidence';
  id: number;
  ip: string;
  account: Account;
  reporterRole: Role;
  categories: number[];
  comment: string;
  reportedAt: Date;
  /** Later reports of the same reporter and address folded into this one. */
  aggregationCount: number;
  /** The country of the reporter's address at report time (the attack map's target). */
  reporterCountry: string | null;
  /**
   * Private evidence (log lines), redacted before storing (reputation/evidence.ts): shown only to
   * its reporter and the operator; dropped with its partition at retention.
   */
  evidence: string | null;
}

/** The per-address aggregate, maintained as reports arrive. */
export interface IpStats {
  [PrimaryKeyProp]?: 'ip';
  [OptionalProps]?: 'positiveFeedback';
  ip: string;
  totalReports: number;
  reportRows: number;
  uniqueReporters: number;
  honeypotReports: number;
  firstReportedAt: Date;
  lastReportedAt: Date;
  categories: number[];
  maxSeverity: number;
  decaySum: number;
  countryCode: string | null;
  asn: number | null;
  isp: string | null;
  positiveFeedback: number;
}

/** The accounts that have reported an address (no foreign key: a plain account id). */
export interface IpReporter {
  [PrimaryKeyProp]?: ['ip', 'accountId'];
  ip: string;
  accountId: number;
}

/** Positive feedback: an address a site unblocked, once per account and address. */
export interface IpFeedback {
  [OptionalProps]?: 'reason';
  id: number;
  ip: string;
  account: Account;
  /** The key it came with; no foreign key, so it outlives the key. */
  keyId: string | null;
  reason: string;
  createdAt: Date;
  updatedAt: Date;
}

/** A range of the operator's whitelist (table `whitelist`). */
export interface WhitelistRange {
  [PrimaryKeyProp]?: 'range';
  [OptionalProps]?: 'note' | 'createdAt' | 'expiresAt';
  /** CIDR, host bits cleared. */
  range: string;
  note: string;
  createdAt: Date;
  /** Until when it holds (an approved delisting); null: until removed. The hourly purge removes it after. */
  expiresAt: Date | null;
}

export const ReportEntity = new EntitySchema<Report>({
  name: 'Report',
  tableName: 'reports',
  indexes: [
    { name: 'reports_account_ip_reported_at_idx', expression: "CREATE INDEX reports_account_ip_reported_at_idx ON ONLY reports USING btree (account_id, ip, reported_at DESC)" },
    { name: 'reports_account_reported_at_idx', expression: "CREATE INDEX reports_account_reported_at_idx ON ONLY reports USING btree (account_id, reported_at DESC)" },
    { name: 'reports_ip_reported_at_idx', expression: "CREATE INDEX reports_ip_reported_at_idx ON ONLY reports USING btree (ip, reported_at DESC, id DESC)" },
  ],
  properties: {
    // From a sequence the table owns, not an identity: PostgreSQL 15 has none on a partitioned table.
    id: { type: bigintNumber(), primary: true, autoincrement: true },
    ip: { type: 'text' },
    account: { kind: 'm:1', entity: 'Account', fieldName: 'account_id', deleteRule: 'cascade', updateRule: 'no action' },
    reporterRole: { type: 'text', fieldName: 'reporter_role' },
    categories: { type: numberArray(), columnType: 'smallint[]' },
    comment: { type: 'text', default: '' },
    reportedAt: { type: 'Date', fieldName: 'reported_at', primary: true },
    aggregationCount: { type: 'integer', fieldName: 'aggregation_count', default: 0 },
    reporterCountry: { type: 'text', fieldName: 'reporter_country', nullable: true },
    evidence: { type: 'text', nullable: true },
  },
});

export const IpStatsEntity = new EntitySchema<IpStats>({
  name: 'IpStats',
  tableName: 'ip_stats',
  indexes: [
    { name: 'ip_stats_address_idx', expression: "CREATE INDEX ip_stats_address_idx ON ip_stats USING btree (((ip)::inet))" },
    { name: 'ip_stats_asn_idx', expression: "CREATE INDEX ip_stats_asn_idx ON ip_stats USING btree (asn, total_reports DESC)" },
    { name: 'ip_stats_asn_recent_idx', expression: "CREATE INDEX ip_stats_asn_recent_idx ON ip_stats USING btree (asn, last_reported_at DESC) WHERE (asn IS NOT NULL)" },
    { name: 'ip_stats_country_idx', expression: "CREATE INDEX ip_stats_country_idx ON ip_stats USING btree (country_code, total_reports DESC)" },
    { name: 'ip_stats_ip_prefix_idx', expression: "CREATE INDEX ip_stats_ip_prefix_idx ON ip_stats USING btree (ip text_pattern_ops)" },
  ],
  properties: {
    ip: { type: 'text', primary: true },
    totalReports: { type: 'integer', fieldName: 'total_reports' },
    reportRows: { type: 'integer', fieldName: 'report_rows' },
    uniqueReporters: { type: 'integer', fieldName: 'unique_reporters' },
    honeypotReports: { type: 'integer', fieldName: 'honeypot_reports' },
    firstReportedAt: { type: 'Date', fieldName: 'first_reported_at' },
    lastReportedAt: { type: 'Date', fieldName: 'last_reported_at' },
    categories: { type: numberArray(), columnType: 'smallint[]' },
    maxSeverity: { type: 'smallint', fieldName: 'max_severity' },
    decaySum: { type: 'double', runtimeType: 'number', columnType: 'double precision', fieldName: 'decay_sum' },
    countryCode: { type: 'text', fieldName: 'country_code', nullable: true },
    asn: { type: 'integer', nullable: true },
    isp: { type: 'text', nullable: true },
    positiveFeedback: { type: 'integer', fieldName: 'positive_feedback', default: 0 },
  },
});

export const IpReporterEntity = new EntitySchema<IpReporter>({
  name: 'IpReporter',
  tableName: 'ip_reporters',
  properties: {
    ip: { type: 'text', primary: true },
    accountId: { type: 'integer', fieldName: 'account_id', primary: true },
  },
});

export const IpFeedbackEntity = new EntitySchema<IpFeedback>({
  name: 'IpFeedback',
  tableName: 'ip_feedback',
  uniques: [{ properties: ['ip', 'account'] }],
  properties: {
    id: { type: bigintNumber(), primary: true, autoincrement: true, generated: 'identity' },
    ip: { type: 'text' },
    account: { kind: 'm:1', entity: 'Account', fieldName: 'account_id', deleteRule: 'cascade', updateRule: 'no action' },
    keyId: { type: 'uuid', fieldName: 'key_id', nullable: true },
    reason: { type: 'text', default: '' },
    createdAt: { type: 'Date', fieldName: 'created_at' },
    updatedAt: { type: 'Date', fieldName: 'updated_at' },
  },
});

export const WhitelistRangeEntity = new EntitySchema<WhitelistRange>({
  name: 'WhitelistRange',
  tableName: 'whitelist',
  indexes: [
    { name: 'whitelist_range_idx', expression: "CREATE INDEX whitelist_range_idx ON whitelist USING gist (range inet_ops)" },
  ],
  properties: {
    range: { type: 'string', columnType: 'cidr', primary: true },
    note: { type: 'text', default: '' },
    createdAt: { type: 'Date', fieldName: 'created_at', defaultRaw: 'now()' },
    expiresAt: { type: 'Date', fieldName: 'expires_at', nullable: true },
  },
});

export const reputationEntities = [ReportEntity, IpStatsEntity, IpReporterEntity, IpFeedbackEntity, WhitelistRangeEntity];
