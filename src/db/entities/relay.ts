import { EntitySchema, OptionalProps, PrimaryKeyProp } from '@mikro-orm/core';
import type { Account } from '../entities.js';
import { bigintNumber } from './types.js';

export type RelayChannel = 'mail' | 'sms';
export type RelayStatus = 'queued' | 'sending' | 'sent' | 'delivered' | 'undelivered' | 'failed';

/** Every accepted send, with its delivery state; the job queue itself is pg-boss's. */
export interface RelayMessage {
  [OptionalProps]?: 'status' | 'siteUrl' | 'attempts' | 'site';
  id: number;
  account: Account;
  channel: RelayChannel;
  periodStart: Date;
  fundedBy: 'inclusive' | 'bundle';
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
  kind: 'purchase' | 'consumption' | 'refund' | 'release' | 'dispute' | 'dispute_won';
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
  properties: {
    id: { type: bigintNumber(), primary: true, autoincrement: true },
    account: { kind: 'm:1', entity: 'Account', fieldName: 'account_id', deleteRule: 'cascade' },
    channel: { type: 'text' },
    periodStart: { type: 'Date', fieldName: 'period_start' },
    fundedBy: { type: 'text', fieldName: 'funded_by' },
    status: { type: 'text', default: 'queued' },
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
  properties: {
    account: { kind: 'm:1', entity: 'Account', fieldName: 'account_id', primary: true, deleteRule: 'cascade' },
    channel: { type: 'text', primary: true },
    periodStart: { type: 'Date', fieldName: 'period_start', primary: true },
    inclusiveUsed: { type: 'integer', fieldName: 'inclusive_used', default: 0 },
  },
});

export const BundleLedgerEntryEntity = new EntitySchema<BundleLedgerEntry>({
  name: 'BundleLedgerEntry',
  tableName: 'bundle_ledger',
  properties: {
    id: { type: bigintNumber(), primary: true, autoincrement: true },
    account: { kind: 'm:1', entity: 'Account', fieldName: 'account_id', deleteRule: 'cascade' },
    channel: { type: 'text' },
    kind: { type: 'text' },
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
    account: { kind: 'm:1', entity: 'Account', fieldName: 'account_id', primary: true, deleteRule: 'cascade' },
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
  properties: {
    code: { type: 'text', primary: true },
    lang: { type: 'text', primary: true },
    body: { type: 'text' },
    builtin: { type: 'boolean', default: false },
  },
});

export const relayEntities = [RelayMessageEntity, RelayUsageEntity, BundleLedgerEntryEntity, BundlePurchaseEntity, CheckoutSessionEntity, SmsTemplateEntity];
