import { EntitySchema, OptionalProps } from '@mikro-orm/core';

/** Where a delisting request stands (src/delisting/rules.ts says what each means). */
export const DELIST_STATUSES = ['unconfirmed', 'open', 'approved', 'rejected', 'expired'] as const;
export type DelistStatus = (typeof DELIST_STATUSES)[number];

/** A request to take an address or range off the list (table `delist_requests`). */
export interface DelistRequest {
  [OptionalProps]?: 'note' | 'mailedAt' | 'confirmedAt' | 'decidedAt' | 'decidedBy' | 'whitelistUntil';
  id: string;
  /** CIDR, host bits cleared (`/32` or `/128` for one address). */
  ip: string;
  email: string;
  reason: string;
  /** Asked from the address itself (or, for IPv6, from its /64). */
  proven: boolean;
  status: DelistStatus;
  /** SHA-256 of the confirmation token; the token is only in the mail. */
  tokenHash: Buffer;
  /** The requester's network (its address, or its /64): what the per-source bound counts. */
  requesterNetwork: string;
  createdAt: Date;
  /** When its confirmation link was mailed; null when no mail went out (bounds). */
  mailedAt: Date | null;
  confirmedAt: Date | null;
  decidedAt: Date | null;
  /** `cli` or `account:<id>` (the dashboard). */
  decidedBy: string | null;
  note: string;
  whitelistUntil: Date | null;
}

export const DelistRequestEntity = new EntitySchema<DelistRequest>({
  name: 'DelistRequest',
  tableName: 'delist_requests',
  indexes: [
    {
      name: 'delist_requests_active_idx',
      expression:
        "CREATE UNIQUE INDEX delist_requests_active_idx ON delist_requests USING btree (ip) WHERE (status = ANY (ARRAY['unconfirmed'::text, 'open'::text]))",
    },
    { name: 'delist_requests_ip_created_at_idx', properties: ['ip', 'createdAt'] },
    { name: 'delist_requests_requester_network_created_at_idx', properties: ['requesterNetwork', 'createdAt'] },
    { name: 'delist_requests_email_mailed_at_idx', properties: ['email', 'mailedAt'] },
    { name: 'delist_requests_status_created_at_idx', properties: ['status', 'createdAt'] },
  ],
  properties: {
    id: { type: 'uuid', primary: true },
    ip: { type: 'string', columnType: 'cidr' },
    email: { type: 'text' },
    reason: { type: 'text' },
    proven: { type: 'boolean' },
    status: { type: 'text', enum: true, items: [...DELIST_STATUSES] },
    tokenHash: { type: 'Buffer', columnType: 'bytea', fieldName: 'token_hash', hidden: true },
    requesterNetwork: { type: 'text', fieldName: 'requester_network' },
    createdAt: { type: 'Date', fieldName: 'created_at' },
    mailedAt: { type: 'Date', fieldName: 'mailed_at', nullable: true },
    confirmedAt: { type: 'Date', fieldName: 'confirmed_at', nullable: true },
    decidedAt: { type: 'Date', fieldName: 'decided_at', nullable: true },
    decidedBy: { type: 'text', fieldName: 'decided_by', nullable: true },
    note: { type: 'text', default: '' },
    whitelistUntil: { type: 'Date', fieldName: 'whitelist_until', nullable: true },
  },
});

export const delistingEntities = [DelistRequestEntity];
