import { EntitySchema, OptionalProps, PrimaryKeyProp } from '@mikro-orm/core';
import type { Account } from '../entities.js';
import { bigintNumber } from './types.js';

export const RELAY_CHANNELS = ['mail', 'sms'] as const;
export type RelayChannel = (typeof RELAY_CHANNELS)[number];
export const RELAY_STATUSES = ['queued', 'sending', 'sent', 'delivered', 'undelivered', 'failed'] as const;
export type RelayStatus = (typeof RELAY_STATUSES)[number];
export const FUNDED_BY = ['inclusive', 'bundle'] as const;
export const LEDGER_KINDS = ['purchase', 'consumption', 'refund', 'release', 'dispute', 'dispute_won'] as const;

/** Every accepted send, with its delivery state; the job queue itself is pg-boss's. */
export interface RelayMessage {
  [OptionalProps]?: 'status' | 'siteUrl' | 'attempts' | 'site';
  id: number;
  account: Account;
  channel: RelayChannel;
  periodStart: Date;
  fundedBy: (typeof FUNDED_BY)[number];
  status: RelayStatus;
  recipient: string;
  siteUrl: string;
  /** The content; null once purged, RELAY_PAYLOAD_RETENTION_HOURS after a final state. */
  payload: Record<string, unknown> | null;
  attempts: number;
  lastError: string | null;
  createdAt: Date;
  finishedAt: Date | null;
  /** The key it was sent with; no foreign key, so it outlives the key. */
  keyId: string | null;
  /** The normalised host of `siteUrl`, or ''. */
  site: string;
  provider: string | null;
  /** The provider's id of the message, which its delivery receipts name. */
  providerId: string | null;
  sendingAt: Date | null;
  sentAt: Date | null;
  receiptAt: Date | null;
  receiptError: string | null;
}

/** The inclusive sends an account used per channel and billing period. */
export interface RelayUsage {
  [PrimaryKeyProp]?: ['account', 'channel', 'periodStart'];
  [OptionalProps]?: 'inclusiveUsed';
  account: Account;
  channel: RelayChannel;
  periodStart: Date;
  inclusiveUsed: number;
}

/**
 * Append-only: purchases (+), consumption (-1 per send), refunds (-) and releases (+1 for a
 * send whose delivery failed). The balance is the sum; it may go below zero after a refund.
 */
export interface BundleLedgerEntry {
  id: number;
  account: Account;
  channel: RelayChannel;
  kind: (typeof LEDGER_KINDS)[number];
  amount: number;
  bundleId: string | null;
  /** The payment provider's event, once: a repeated event credits nothing. */
  eventId: string | null;
  /** The relay message a consumption or release is for (no foreign key). */
  messageId: number | null;
  createdAt: Date;
}

/**
 * A purchase a payment provider reported (Stripe: a Checkout Session), credited or not. No
 * foreign key to `accounts`: the record of a payment outlives the account it was for.
 */
export interface BundlePurchase {
  [PrimaryKeyProp]?: 'purchaseRef';
  purchaseRef: string;
  paymentRef: string | null;
  accountId: number;
  bundleId: string;
  eventId: string;
  credited: boolean;
  /** Why it was not credited. */
  reason: string | null;
  createdAt: Date;
  refundEventId: string | null;
  refundedAt: Date | null;
  /** The dispute (chargeback) of its payment, if one was opened. */
  disputeRef: string | null;
  /** Set while a dispute holds its credits back. */
  disputedAt: Date | null;
}

/** The open Stripe Checkout Session of an account and bundle, or the claim of one being made. */
export interface CheckoutSession {
  [PrimaryKeyProp]?: ['account', 'bundleId'];
  account: Account;
  bundleId: string;
  /** The request making the session now; null once it is made. */
  claim: string | null;
  sessionId: string | null;
  url: string | null;
  /** When the session expires, or until when the claim holds. */
  expiresAt: Date;
  createdAt: Date;
}

/** An SMS text an operator can extend; `{code}` and `{expiry}` are filled in. */
export interface SmsTemplate {
  [PrimaryKeyProp]?: ['code', 'lang'];
  [OptionalProps]?: 'builtin';
  code: string;
  lang: string;
  body: string;
  builtin: boolean;
}

export const RelayMessageEntity = new EntitySchema<RelayMessage>({
  name: 'RelayMessage',
  tableName: 'relay_messages',
  indexes: [
    { name: 'relay_messages_account_created_idx', expression: "CREATE INDEX relay_messages_account_created_idx ON relay_messages USING btree (account_id, created_at DESC)" },
    { name: 'relay_messages_account_day_idx', expression: "CREATE INDEX relay_messages_account_day_idx ON relay_messages USING btree (account_id, created_at) INCLUDE (site, key_id)" },
    { name: 'relay_messages_account_period_idx', properties: ['account', 'channel', 'periodStart', 'status'] },
    { name: 'relay_messages_finished_idx', expression: "CREATE INDEX relay_messages_finished_idx ON relay_messages USING btree (finished_at) WHERE (status = ANY (ARRAY['sent'::text, 'delivered'::text, 'undelivered'::text, 'failed'::text]))" },
    { name: 'relay_messages_payload_kept_idx', expression: "CREATE INDEX relay_messages_payload_kept_idx ON relay_messages USING btree (finished_at) WHERE ((payload IS NOT NULL) AND (status = ANY (ARRAY['sent'::text, 'delivered'::text, 'undelivered'::text, 'failed'::text])))" },
    { name: 'relay_messages_pending_idx', expression: "CREATE INDEX relay_messages_pending_idx ON relay_messages USING btree (channel, created_at) WHERE (status = ANY (ARRAY['queued'::text, 'sending'::text]))" },
    { name: 'relay_messages_provider_id_idx', expression: "CREATE INDEX relay_messages_provider_id_idx ON relay_messages USING btree (provider, provider_id) WHERE (provider_id IS NOT NULL)" },
    { name: 'relay_messages_recipient_idx', expression: "CREATE INDEX relay_messages_recipient_idx ON relay_messages USING btree (recipient, created_at DESC)" },
  ],
  checks: [
    { name: 'relay_messages_payload_check', expression: "((payload IS NOT NULL) OR (status = ANY (ARRAY['sent'::text, 'delivered'::text, 'undelivered'::text, 'failed'::text])))" },
  ],
  properties: {
    id: { type: bigintNumber(), primary: true, autoincrement: true, generated: 'identity' },
    account: { kind: 'm:1', entity: 'Account', fieldName: 'account_id', deleteRule: 'cascade', updateRule: 'no action' },
    channel: { type: 'text', enum: true, items: [...RELAY_CHANNELS] },
    periodStart: { type: 'Date', fieldName: 'period_start' },
    fundedBy: { type: 'text', fieldName: 'funded_by', enum: true, items: [...FUNDED_BY] },
    status: { type: 'text', default: 'queued', enum: true, items: [...RELAY_STATUSES] },
    recipient: { type: 'text' },
    siteUrl: { type: 'text', fieldName: 'site_url', default: '' },
    payload: { type: 'json', nullable: true },
    attempts: { type: 'integer', default: 0 },
    lastError: { type: 'text', fieldName: 'last_error', nullable: true },
    createdAt: { type: 'Date', fieldName: 'created_at' },
    finishedAt: { type: 'Date', fieldName: 'finished_at', nullable: true },
    keyId: { type: 'uuid', fieldName: 'key_id', nullable: true },
    site: { type: 'text', default: '' },
    provider: { type: 'text', nullable: true },
    providerId: { type: 'text', fieldName: 'provider_id', nullable: true },
    sendingAt: { type: 'Date', fieldName: 'sending_at', nullable: true },
    sentAt: { type: 'Date', fieldName: 'sent_at', nullable: true },
    receiptAt: { type: 'Date', fieldName: 'receipt_at', nullable: true },
    receiptError: { type: 'text', fieldName: 'receipt_error', nullable: true },
  },
});

export const RelayUsageEntity = new EntitySchema<RelayUsage>({
  name: 'RelayUsage',
  tableName: 'relay_usage',
  checks: [
    { name: 'relay_usage_inclusive_used_check', expression: "(inclusive_used >= 0)" },
  ],
  properties: {
    account: { kind: 'm:1', entity: 'Account', fieldName: 'account_id', primary: true, deleteRule: 'cascade', updateRule: 'no action' },
    channel: { type: 'text', primary: true, enum: true, items: [...RELAY_CHANNELS] },
    periodStart: { type: 'Date', fieldName: 'period_start', primary: true },
    inclusiveUsed: { type: 'integer', fieldName: 'inclusive_used', default: 0 },
  },
});

export const BundleLedgerEntryEntity = new EntitySchema<BundleLedgerEntry>({
  name: 'BundleLedgerEntry',
  tableName: 'bundle_ledger',
  indexes: [
    { name: 'bundle_ledger_account_idx', properties: ['account', 'channel'] },
  ],
  properties: {
    id: { type: bigintNumber(), primary: true, autoincrement: true, generated: 'identity' },
    account: { kind: 'm:1', entity: 'Account', fieldName: 'account_id', deleteRule: 'cascade', updateRule: 'no action' },
    channel: { type: 'text', enum: true, items: [...RELAY_CHANNELS] },
    kind: { type: 'text', enum: true, items: [...LEDGER_KINDS] },
    amount: { type: 'integer' },
    bundleId: { type: 'text', fieldName: 'bundle_id', nullable: true },
    eventId: { type: 'text', fieldName: 'event_id', nullable: true, unique: true },
    messageId: { type: bigintNumber(), fieldName: 'message_id', nullable: true },
    createdAt: { type: 'Date', fieldName: 'created_at' },
  },
});

export const BundlePurchaseEntity = new EntitySchema<BundlePurchase>({
  name: 'BundlePurchase',
  tableName: 'bundle_purchases',
  indexes: [
    { name: 'bundle_purchases_account_idx', expression: "CREATE INDEX bundle_purchases_account_idx ON bundle_purchases USING btree (account_id, created_at DESC)" },
  ],
  properties: {
    purchaseRef: { type: 'text', fieldName: 'purchase_ref', primary: true },
    paymentRef: { type: 'text', fieldName: 'payment_ref', nullable: true, unique: true },
    accountId: { type: 'integer', fieldName: 'account_id' },
    bundleId: { type: 'text', fieldName: 'bundle_id' },
    eventId: { type: 'text', fieldName: 'event_id' },
    credited: { type: 'boolean' },
    reason: { type: 'text', nullable: true },
    createdAt: { type: 'Date', fieldName: 'created_at' },
    refundEventId: { type: 'text', fieldName: 'refund_event_id', nullable: true },
    refundedAt: { type: 'Date', fieldName: 'refunded_at', nullable: true },
    disputeRef: { type: 'text', fieldName: 'dispute_ref', nullable: true },
    disputedAt: { type: 'Date', fieldName: 'disputed_at', nullable: true },
  },
});

export const CheckoutSessionEntity = new EntitySchema<CheckoutSession>({
  name: 'CheckoutSession',
  tableName: 'checkout_sessions',
  properties: {
    account: { kind: 'm:1', entity: 'Account', fieldName: 'account_id', primary: true, deleteRule: 'cascade', updateRule: 'no action' },
    bundleId: { type: 'text', fieldName: 'bundle_id', primary: true },
    claim: { type: 'uuid', nullable: true },
    sessionId: { type: 'text', fieldName: 'session_id', nullable: true, unique: true },
    url: { type: 'text', nullable: true },
    expiresAt: { type: 'Date', fieldName: 'expires_at' },
    createdAt: { type: 'Date', fieldName: 'created_at' },
  },
});

export const SmsTemplateEntity = new EntitySchema<SmsTemplate>({
  name: 'SmsTemplate',
  tableName: 'sms_templates',
  checks: [
    { name: 'sms_templates_body_check', expression: "((length(body) <= 480) AND (body ~~ '%{code}%'::text))" },
    { name: 'sms_templates_code_check', expression: "(code ~ '^[a-z0-9_]{1,40}$'::text)" },
    { name: 'sms_templates_lang_check', expression: "(lang ~ '^[a-z]{2}$'::text)" },
  ],
  properties: {
    code: { type: 'text', primary: true },
    lang: { type: 'text', primary: true },
    body: { type: 'text' },
    builtin: { type: 'boolean', default: false },
  },
});

export const relayEntities = [RelayMessageEntity, RelayUsageEntity, BundleLedgerEntryEntity, BundlePurchaseEntity, CheckoutSessionEntity, SmsTemplateEntity];
