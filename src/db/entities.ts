import { EntitySchema } from '@mikro-orm/core';
import type { Role } from '../roles.js';

export interface Account {
  id: number;
  email: string | null;
  role: Role;
  /** Business licences (2-20); 1 for every other role. */
  licences: number;
  createdAt: Date;
  /** A web login's password hash; null for accounts made without one (the CLI's). */
  passwordHash: string | null;
  emailVerifiedAt: Date | null;
  /** Business and Enterprise: the name their relayed mails and SMS carry (white-label), at most 40 characters. */
  senderName: string | null;
}

export interface ApiKey {
  /** Public identifier of the key, safe to show and log. */
  id: string;
  account: Account;
  /** The first characters of the key, shown in listings so an operator can recognise it. */
  prefix: string;
  /** A name the operator or the account gave the key (shown as `keyName` by /verify-key). */
  name: string;
  /** SHA-256 of the whole key; the key itself is never stored. */
  hash: Buffer;
  createdAt: Date;
  revokedAt: Date | null;
  /** Written at most once per key per few minutes, never per request. */
  lastUsedAt: Date | null;
}

/** `core`: the 30 of the specification; `web`: the field clients' 31-58; `custom`: the operator's. */
export const CATALOGUES = ['core', 'web', 'custom'] as const;
export type Catalogue = (typeof CATALOGUES)[number];

export interface ThreatCategory {
  id: number;
  name: string;
  description: string;
  severityLevel: number;
  catalogue: Catalogue;
  /** Only enabled categories are listed, taken in reports and accepted as filters. */
  enabled: boolean;
}

export const AccountEntity = new EntitySchema<Account>({
  name: 'Account',
  tableName: 'accounts',
  indexes: [
    { name: 'accounts_email_idx', expression: "CREATE INDEX accounts_email_idx ON accounts USING btree (lower(email))" },
    { name: 'accounts_login_email_key', expression: "CREATE UNIQUE INDEX accounts_login_email_key ON accounts USING btree (lower(email)) WHERE (password_hash IS NOT NULL)" },
  ],
  checks: [
    { name: 'accounts_licences_check', expression: "((licences >= 1) AND (licences <= 20))" },
    { name: 'accounts_sender_name_check', expression: "((sender_name IS NULL) OR (((length(sender_name) >= 1) AND (length(sender_name) <= 40)) AND (sender_name !~ '[[:cntrl:]]'::text)))" },
  ],
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true, generated: 'identity' },
    email: { type: 'text', nullable: true },
    // The roles the column's CHECK admits: roles.ts's ROLES (test/integration/schema-diff.test.ts
    // holds the two equal, and the diff holds this equal to the migrated CHECK).
    role: { type: 'text', enum: true, items: ['free', 'contributor', 'professional', 'business', 'enterprise', 'honeypot'] satisfies Role[] },
    licences: { type: 'integer', default: 1 },
    createdAt: { type: 'Date', fieldName: 'created_at', defaultRaw: 'now()' },
    // Not loaded unless asked for, and never serialised.
    passwordHash: { type: 'text', fieldName: 'password_hash', nullable: true, lazy: true, hidden: true },
    emailVerifiedAt: { type: 'Date', fieldName: 'email_verified_at', nullable: true },
    senderName: { type: 'text', fieldName: 'sender_name', nullable: true },
  },
});

export const ApiKeyEntity = new EntitySchema<ApiKey>({
  name: 'ApiKey',
  tableName: 'api_keys',
  indexes: [
    { name: 'api_keys_account_id_idx', properties: ['account'] },
    { name: 'api_keys_account_idx', properties: ['account'] },
  ],
  properties: {
    id: { type: 'uuid', primary: true },
    account: { kind: 'm:1', entity: () => AccountEntity, fieldName: 'account_id', deleteRule: 'cascade', updateRule: 'no action' },
    prefix: { type: 'text' },
    name: { type: 'text', default: '' },
    hash: { type: 'Buffer', columnType: 'bytea', unique: true },
    createdAt: { type: 'Date', fieldName: 'created_at', defaultRaw: 'now()' },
    revokedAt: { type: 'Date', fieldName: 'revoked_at', nullable: true },
    lastUsedAt: { type: 'Date', fieldName: 'last_used_at', nullable: true },
  },
});

export const ThreatCategoryEntity = new EntitySchema<ThreatCategory>({
  name: 'ThreatCategory',
  tableName: 'threat_categories',
  checks: [
    { name: 'threat_categories_severity_level_check', expression: "((severity_level >= 1) AND (severity_level <= 10))" },
  ],
  properties: {
    id: { type: 'integer', primary: true, autoincrement: false },
    name: { type: 'text', unique: true },
    description: { type: 'text' },
    severityLevel: { type: 'integer', fieldName: 'severity_level' },
    // The column's default, which the rows of the first migration took; new categories name theirs.
    catalogue: { type: 'text', default: 'core', enum: true, items: [...CATALOGUES] },
    enabled: { type: 'boolean', default: true },
  },
});
