import { EntitySchema, OptionalProps } from '@mikro-orm/core';
import type { Account } from '../entities.js';
import { bigintNumber, numberArray } from './types.js';

/** A webhook subscription of an account (table `webhook_endpoints`). */
export interface WebhookEndpoint {
  [OptionalProps]?: 'disabledAt' | 'failingSince' | 'lastSnapshotId';
  id: string;
  account: Account;
  url: string;
  events: string[];
  confidence: number;
  categories: number[];
  /** `whsec_…`: sealed (`sealed:v1:…`) when WEBHOOK_SECRETS_KEY is set, else in clear (it is needed to sign; webhooks/secrets.ts). */
  secret: string;
  createdAt: Date;
  disabledAt: Date | null;
  failingSince: Date | null;
  /** The snapshot up to which regeneration events were made for it. */
  lastSnapshotId: number | null;
}

/** One event to deliver to an endpoint, with its attempts (table `webhook_deliveries`). */
export interface WebhookDelivery {
  [OptionalProps]?: 'attempts' | 'nextAttemptAt' | 'lastStatus' | 'lastError' | 'deliveredAt';
  id: string;
  endpoint: WebhookEndpoint;
  eventType: string;
  payload: unknown;
  attempts: number;
  nextAttemptAt: Date | null;
  lastStatus: number | null;
  lastError: string | null;
  deliveredAt: Date | null;
  createdAt: Date;
}

export const WebhookEndpointEntity = new EntitySchema<WebhookEndpoint>({
  name: 'WebhookEndpoint',
  tableName: 'webhook_endpoints',
  indexes: [{ name: 'webhook_endpoints_account_id_idx', properties: ['account'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    account: { kind: 'm:1', entity: 'Account', fieldName: 'account_id', deleteRule: 'cascade', updateRule: 'no action' },
    url: { type: 'text' },
    events: { type: 'string[]', columnType: 'text[]' },
    confidence: { type: 'smallint' },
    categories: { type: numberArray(), columnType: 'smallint[]' },
    secret: { type: 'text', hidden: true },
    createdAt: { type: 'Date', fieldName: 'created_at' },
    disabledAt: { type: 'Date', fieldName: 'disabled_at', nullable: true },
    failingSince: { type: 'Date', fieldName: 'failing_since', nullable: true },
    lastSnapshotId: { type: bigintNumber(), fieldName: 'last_snapshot_id', nullable: true },
  },
});

export const WebhookDeliveryEntity = new EntitySchema<WebhookDelivery>({
  name: 'WebhookDelivery',
  tableName: 'webhook_deliveries',
  indexes: [
    { name: 'webhook_deliveries_endpoint_id_idx', properties: ['endpoint'] },
    { name: 'webhook_deliveries_next_attempt_at_idx', properties: ['nextAttemptAt'] },
    { name: 'webhook_deliveries_created_at_idx', properties: ['createdAt'] },
  ],
  properties: {
    id: { type: 'text', primary: true },
    endpoint: { kind: 'm:1', entity: 'WebhookEndpoint', fieldName: 'endpoint_id', deleteRule: 'cascade', updateRule: 'no action' },
    eventType: { type: 'text', fieldName: 'event_type' },
    payload: { type: 'json' },
    attempts: { type: 'integer', default: 0 },
    nextAttemptAt: { type: 'Date', fieldName: 'next_attempt_at', nullable: true },
    lastStatus: { type: 'integer', fieldName: 'last_status', nullable: true },
    lastError: { type: 'text', fieldName: 'last_error', nullable: true },
    deliveredAt: { type: 'Date', fieldName: 'delivered_at', nullable: true },
    createdAt: { type: 'Date', fieldName: 'created_at' },
  },
});

export const webhooksEntities = [WebhookEndpointEntity, WebhookDeliveryEntity];
