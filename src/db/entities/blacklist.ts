import { EntitySchema, PrimaryKeyProp } from '@mikro-orm/core';
import { bigintNumber, numberArray } from './types.js';

/** A blacklist the scheduled job wrote, so that every process serves the same list and ETag. */
export interface BlacklistSnapshot {
  id: number;
  generatedAt: Date;
  checkedAt: Date;
  contentHash: string;
  entryCount: number;
  /** scorePositions[s]: how many entries score s or more (entries are ordered by score). */
  scorePositions: number[];
  stats: Record<string, unknown>;
}

/**
 * One version of an address's entry, shared by every snapshot from `fromSnapshot` up to (not
 * including) `untilSnapshot` (null while current). A snapshot's list is its alive versions in
 * the order (score desc, lastReportedAt desc, ip).
 */
export interface BlacklistEntry {
  [PrimaryKeyProp]?: ['ip', 'fromSnapshot'];
  ip: string;
  fromSnapshot: number;
  untilSnapshot: number | null;
  score: number;
  lastReportedAt: Date;
  totalReports: number;
  categories: number[];
  countryCode: string | null;
  /** Where in a bouncer's 12-hour renewal cycle the entry's decision is renewed (seconds). */
  refreshPhase: number;
}

/** A CrowdSec bouncer: its hashed key, what it takes from the list, and where its last pull ended. */
export interface Bouncer {
  id: number;
  name: string;
  keyHash: Buffer;
  keyPrefix: string;
  confidenceMinimum: number;
  categories: number[] | null;
  entryLimit: number | null;
  createdAt: Date;
  lastPullAt: Date | null;
  lastSnapshotId: number | null;
  lastChoice: Record<string, unknown> | null;
  lastSeenAt: Date | null;
  lastIp: string | null;
  userAgent: string | null;
}

export const BlacklistSnapshotEntity = new EntitySchema<BlacklistSnapshot>({
  name: 'BlacklistSnapshot',
  tableName: 'blacklist_snapshots',
  properties: {
    id: { type: bigintNumber(), primary: true, autoincrement: true, generated: 'identity' },
    generatedAt: { type: 'Date', fieldName: 'generated_at' },
    checkedAt: { type: 'Date', fieldName: 'checked_at' },
    contentHash: { type: 'text', fieldName: 'content_hash' },
    entryCount: { type: 'integer', fieldName: 'entry_count' },
    scorePositions: { type: numberArray(), columnType: 'integer[]', fieldName: 'score_positions' },
    stats: { type: 'json' },
  },
});

export const BlacklistEntryEntity = new EntitySchema<BlacklistEntry>({
  name: 'BlacklistEntry',
  tableName: 'blacklist_entries',
  indexes: [
    {
      name: 'blacklist_entries_order_idx',
      expression: 'CREATE INDEX blacklist_entries_order_idx ON blacklist_entries USING btree (score DESC, last_reported_at DESC, ip)',
    },
    { name: 'blacklist_entries_address_idx', expression: 'CREATE INDEX blacklist_entries_address_idx ON blacklist_entries USING btree (((ip)::inet))' },
    { name: 'blacklist_entries_refresh_idx', properties: ['refreshPhase'] },
    { name: 'blacklist_entries_from_idx', properties: ['fromSnapshot'] },
  ],
  properties: {
    ip: { type: 'text', primary: true },
    fromSnapshot: { type: bigintNumber(), fieldName: 'from_snapshot', primary: true },
    untilSnapshot: { type: bigintNumber(), fieldName: 'until_snapshot', nullable: true },
    score: { type: 'smallint' },
    lastReportedAt: { type: 'Date', fieldName: 'last_reported_at' },
    totalReports: { type: 'integer', fieldName: 'total_reports' },
    categories: { type: numberArray(), columnType: 'smallint[]' },
    countryCode: { type: 'text', fieldName: 'country_code', nullable: true },
    refreshPhase: { type: 'integer', fieldName: 'refresh_phase', default: 0 },
  },
});

export const BouncerEntity = new EntitySchema<Bouncer>({
  name: 'Bouncer',
  tableName: 'bouncers',
  checks: [
    { name: 'bouncers_confidence_minimum_check', expression: "((confidence_minimum >= 0) AND (confidence_minimum <= 100))" },
    { name: 'bouncers_entry_limit_check', expression: "(entry_limit > 0)" },
  ],
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true, generated: 'identity' },
    name: { type: 'text', unique: true },
    keyHash: { type: 'Buffer', columnType: 'bytea', fieldName: 'key_hash', unique: true },
    keyPrefix: { type: 'text', fieldName: 'key_prefix' },
    confidenceMinimum: { type: 'smallint', fieldName: 'confidence_minimum', default: 90 },
    categories: { type: numberArray(), columnType: 'smallint[]', nullable: true },
    entryLimit: { type: 'integer', fieldName: 'entry_limit', nullable: true },
    createdAt: { type: 'Date', fieldName: 'created_at' },
    lastPullAt: { type: 'Date', fieldName: 'last_pull_at', nullable: true },
    lastSnapshotId: { type: bigintNumber(), fieldName: 'last_snapshot_id', nullable: true },
    lastChoice: { type: 'json', fieldName: 'last_choice', nullable: true },
    lastSeenAt: { type: 'Date', fieldName: 'last_seen_at', nullable: true },
    lastIp: { type: 'text', fieldName: 'last_ip', nullable: true },
    userAgent: { type: 'text', fieldName: 'user_agent', nullable: true },
  },
});

/**
 * A listed address as the regeneration last scored it (the whitelist left out): a snapshot is
 * written from these. `changesAt`: the last moment the score is known to hold (its decay crosses
 * to a lower integer just after); null when it never changes again.
 */
export interface BlacklistScore {
  ip: string;
  score: number;
  lastReportedAt: Date;
  totalReports: number;
  categories: number[];
  countryCode: string | null;
  changesAt: Date | null;
}

/**
 * A version a snapshot closed: the entry (ip, fromSnapshot) is alive until `untilSnapshot`. Kept
 * apart from blacklist_entries so that no index there names `until_snapshot` and a close stays a
 * HOT update (the BlacklistClosures migration).
 */
export interface BlacklistClosure {
  untilSnapshot: number;
  ip: string;
  fromSnapshot: number;
}

/** An address whose inputs changed since the last regeneration (appended by triggers). */
export interface BlacklistDirty {
  id: number;
  ip: string;
}

/** The one row saying when `blacklist_scores` was last scored whole (`fullAt`) and at all (`scoredAt`). */
export interface BlacklistRegeneration {
  id: number;
  fullAt: Date;
  scoredAt: Date;
}

export const BlacklistScoreEntity = new EntitySchema<BlacklistScore>({
  name: 'BlacklistScore',
  tableName: 'blacklist_scores',
  indexes: [
    { name: 'blacklist_scores_changes_idx', properties: ['changesAt'] },
  ],
  properties: {
    ip: { type: 'text', primary: true },
    score: { type: 'smallint' },
    lastReportedAt: { type: 'Date', fieldName: 'last_reported_at' },
    totalReports: { type: 'integer', fieldName: 'total_reports' },
    categories: { type: numberArray(), columnType: 'smallint[]' },
    countryCode: { type: 'text', fieldName: 'country_code', nullable: true },
    changesAt: { type: 'Date', fieldName: 'changes_at', nullable: true },
  },
});

export const BlacklistClosureEntity = new EntitySchema<BlacklistClosure>({
  name: 'BlacklistClosure',
  tableName: 'blacklist_closures',
  properties: {
    untilSnapshot: { type: bigintNumber(), fieldName: 'until_snapshot', primary: true },
    ip: { type: 'text', primary: true },
    fromSnapshot: { type: bigintNumber(), fieldName: 'from_snapshot' },
  },
});

export const BlacklistDirtyEntity = new EntitySchema<BlacklistDirty>({
  name: 'BlacklistDirty',
  tableName: 'blacklist_dirty',
  properties: {
    id: { type: bigintNumber(), primary: true, autoincrement: true, generated: 'identity' },
    ip: { type: 'text' },
  },
});

export const BlacklistRegenerationEntity = new EntitySchema<BlacklistRegeneration>({
  name: 'BlacklistRegeneration',
  tableName: 'blacklist_regeneration',
  properties: {
    id: { type: 'smallint', primary: true, autoincrement: false },
    fullAt: { type: 'Date', fieldName: 'full_at' },
    scoredAt: { type: 'Date', fieldName: 'scored_at' },
  },
});

export const blacklistEntities = [
  BlacklistSnapshotEntity,
  BlacklistEntryEntity,
  BouncerEntity,
  BlacklistScoreEntity,
  BlacklistClosureEntity,
  BlacklistDirtyEntity,
  BlacklistRegenerationEntity,
];
