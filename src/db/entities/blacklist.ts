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

/** One address of a snapshot, in the list's order. */
export interface BlacklistEntry {
  [PrimaryKeyProp]?: ['snapshot', 'position'];
  snapshot: BlacklistSnapshot;
  position: number;
  ip: string;
  score: number;
  lastReportedAt: Date;
  totalReports: number;
  categories: number[];
  countryCode: string | null;
}

export const BlacklistSnapshotEntity = new EntitySchema<BlacklistSnapshot>({
  name: 'BlacklistSnapshot',
  tableName: 'blacklist_snapshots',
  properties: {
    id: { type: bigintNumber(), primary: true, autoincrement: true },
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
  properties: {
    snapshot: { kind: 'm:1', entity: () => BlacklistSnapshotEntity, fieldName: 'snapshot_id', primary: true, deleteRule: 'cascade' },
    position: { type: 'integer', primary: true },
    ip: { type: 'text' },
    score: { type: 'smallint' },
    lastReportedAt: { type: 'Date', fieldName: 'last_reported_at' },
    totalReports: { type: 'integer', fieldName: 'total_reports' },
    categories: { type: numberArray(), columnType: 'smallint[]' },
    countryCode: { type: 'text', fieldName: 'country_code', nullable: true },
  },
});

export const blacklistEntities = [BlacklistSnapshotEntity, BlacklistEntryEntity];
