import { EntitySchema, OptionalProps, PrimaryKeyProp } from '@mikro-orm/core';
import type { Account } from '../entities.js';
import { bigintNumber } from './types.js';

// Secrets are stored as SHA-256 only (session ids, link tokens, invite codes), like the keys:
// a copy of the database opens no session and follows no link.

/** A signed-in browser. */
export interface WebSession {
  [PrimaryKeyProp]?: 'idHash';
  [OptionalProps]?: 'ip' | 'userAgent';
  idHash: Buffer;
  account: Account;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
  ip: string;
  userAgent: string;
  /** A one-time message to the next page, sealed with a key only the browser's cookie gives. */
  flash: Buffer | null;
}

export const TOKEN_PURPOSES = ['verify', 'reset'] as const;

/** A one-time link: address verification or password reset. */
export interface AccountToken {
  [PrimaryKeyProp]?: 'tokenHash';
  tokenHash: Buffer;
  account: Account;
  purpose: (typeof TOKEN_PURPOSES)[number];
  createdAt: Date;
  expiresAt: Date;
  usedAt: Date | null;
}

/** An invite code for sign-up by invitation. */
export interface Invite {
  [PrimaryKeyProp]?: 'codeHash';
  [OptionalProps]?: 'note';
  codeHash: Buffer;
  note: string;
  createdAt: Date;
  expiresAt: Date;
  usedAt: Date | null;
  /** The account that used it; null again if that account is deleted. */
  usedBy: Account | null;
}

/** A fixed window of sign-in, sign-up or reset attempts per subject (an address or a source IP, per action). */
export interface AuthThrottleWindow {
  [PrimaryKeyProp]?: ['subject', 'windowStart'];
  subject: string;
  windowStart: Date;
  attempts: number;
}

/** The audit trail of an account. */
export interface AuditEvent {
  [OptionalProps]?: 'actor' | 'ip' | 'detail';
  id: number;
  /** Null for a step that belongs to no account (a delisting request, the operator's CLI). */
  account: Account | null;
  at: Date;
  kind: string;
  actor: string;
  ip: string;
  detail: Record<string, unknown>;
}

/** A secret the server makes itself and every process shares (the CSRF key). */
export interface WebSecret {
  [PrimaryKeyProp]?: 'name';
  [OptionalProps]?: 'createdAt';
  name: string;
  value: Buffer;
  createdAt: Date;
}

export const WebSessionEntity = new EntitySchema<WebSession>({
  name: 'WebSession',
  tableName: 'web_sessions',
  indexes: [
    { name: 'web_sessions_account_idx', properties: ['account'] },
    { name: 'web_sessions_expires_idx', properties: ['expiresAt'] },
  ],
  properties: {
    idHash: { type: 'Buffer', columnType: 'bytea', fieldName: 'id_hash', primary: true },
    account: { kind: 'm:1', entity: 'Account', fieldName: 'account_id', deleteRule: 'cascade', updateRule: 'no action' },
    createdAt: { type: 'Date', fieldName: 'created_at' },
    lastSeenAt: { type: 'Date', fieldName: 'last_seen_at' },
    expiresAt: { type: 'Date', fieldName: 'expires_at' },
    ip: { type: 'text', default: '' },
    userAgent: { type: 'text', fieldName: 'user_agent', default: '' },
    flash: { type: 'Buffer', columnType: 'bytea', nullable: true, hidden: true },
  },
});

export const AccountTokenEntity = new EntitySchema<AccountToken>({
  name: 'AccountToken',
  tableName: 'account_tokens',
  indexes: [
    { name: 'account_tokens_account_idx', properties: ['account', 'purpose'] },
    { name: 'account_tokens_expires_idx', properties: ['expiresAt'] },
  ],
  properties: {
    tokenHash: { type: 'Buffer', columnType: 'bytea', fieldName: 'token_hash', primary: true },
    account: { kind: 'm:1', entity: 'Account', fieldName: 'account_id', deleteRule: 'cascade', updateRule: 'no action' },
    purpose: { type: 'text', enum: true, items: [...TOKEN_PURPOSES] },
    createdAt: { type: 'Date', fieldName: 'created_at' },
    expiresAt: { type: 'Date', fieldName: 'expires_at' },
    usedAt: { type: 'Date', fieldName: 'used_at', nullable: true },
  },
});

export const InviteEntity = new EntitySchema<Invite>({
  name: 'Invite',
  tableName: 'invites',
  properties: {
    codeHash: { type: 'Buffer', columnType: 'bytea', fieldName: 'code_hash', primary: true },
    note: { type: 'text', default: '' },
    createdAt: { type: 'Date', fieldName: 'created_at' },
    expiresAt: { type: 'Date', fieldName: 'expires_at' },
    usedAt: { type: 'Date', fieldName: 'used_at', nullable: true },
    usedBy: { kind: 'm:1', entity: 'Account', fieldName: 'used_by', nullable: true, deleteRule: 'set null', updateRule: 'no action' },
  },
});

export const AuthThrottleWindowEntity = new EntitySchema<AuthThrottleWindow>({
  name: 'AuthThrottleWindow',
  tableName: 'auth_throttle',
  properties: {
    subject: { type: 'text', primary: true },
    windowStart: { type: 'Date', fieldName: 'window_start', primary: true },
    attempts: { type: 'integer' },
  },
});

export const AuditEventEntity = new EntitySchema<AuditEvent>({
  name: 'AuditEvent',
  tableName: 'audit_events',
  indexes: [
    { name: 'audit_events_account_at_idx', expression: "CREATE INDEX audit_events_account_at_idx ON audit_events USING btree (account_id, at DESC)" },
    { name: 'audit_events_at_idx', properties: ['at'] },
  ],
  properties: {
    id: { type: bigintNumber(), primary: true, autoincrement: true, generated: 'identity' },
    account: { kind: 'm:1', entity: 'Account', fieldName: 'account_id', deleteRule: 'cascade', updateRule: 'no action', nullable: true },
    at: { type: 'Date' },
    kind: { type: 'text' },
    actor: { type: 'text', default: '' },
    ip: { type: 'text', default: '' },
    detail: { type: 'json', defaultRaw: `'{}'` },
  },
});

export const WebSecretEntity = new EntitySchema<WebSecret>({
  name: 'WebSecret',
  tableName: 'web_secrets',
  properties: {
    name: { type: 'text', primary: true },
    value: { type: 'Buffer', columnType: 'bytea', hidden: true },
    createdAt: { type: 'Date', fieldName: 'created_at', defaultRaw: 'now()' },
  },
});

export const accountsEntities = [WebSessionEntity, AccountTokenEntity, InviteEntity, AuthThrottleWindowEntity, AuditEventEntity, WebSecretEntity];
