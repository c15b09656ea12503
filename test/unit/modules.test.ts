import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { systemClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { Orm } from '../../src/db/orm.js';
import type { Pool } from '../../src/db/pool.js';
import type { GeoIp } from '../../src/geo/geoip.js';
import type { Metering } from '../../src/http/metering.js';
import { buildModules } from '../../src/modules.js';
import { loadApiArtifacts, type ApiDocument } from '../../src/openapi.js';

// Building the modules does no I/O: a database that refuses every use proves it.
const refuse = (): never => {
  throw new Error('building the modules touched the database');
};
const pool = { query: refuse, connect: refuse, totalCount: 0, idleCount: 0, waitingCount: 0 } as unknown as Pool;
const orm = { em: new Proxy({}, { get: () => refuse }) } as unknown as Orm;
const geo: GeoIp = { lookup: refuse };
const build = () => buildModules({ orm, pool, clock: systemClock, logger: pino({ level: 'silent' }), config: loadConfig({}), geo });

const operationsOf = (document: ApiDocument) =>
  Object.values(document.paths ?? {}).flatMap((item) =>
    Object.values(item as Record<string, { operationId?: string }>).flatMap((op) => (op?.operationId ? [op.operationId] : [])),
  );

describe('the areas composed once (src/modules.ts)', () => {
  it('answers every operation of the four documents, each from one area, and no other', () => {
    const api = loadApiArtifacts();
    const documented = [api.document, api.protocols.crowdsec.document, api.protocols.abuseipdb.document, api.internal.document].flatMap(operationsOf);
    const handlers = build().handlers({ metering: {} as Metering });
    expect(Object.keys(handlers).sort()).toEqual([...documented].sort());
    for (const handler of Object.values(handlers)) expect(typeof handler).toBe('function');
  });

  it('runs the three jobs beside the requests, in the order they start', () => {
    expect(build().jobs.map((job) => job.constructor.name)).toEqual(['BlacklistJob', 'PurgeJob', 'WebhookDispatcher']);
  });

  it('builds each shared piece once: the areas that use the snapshots, the relay messages and the mailer hold the same one', () => {
    const modules = build();
    const held = (service: object, name: string) => (service as Record<string, unknown>)[name];
    expect(held(modules.stats.service, 'snapshots')).toBe(modules.blacklist.snapshots);
    expect(held(modules.crowdsec.decisions, 'snapshots')).toBe(modules.blacklist.snapshots);
    expect(held(modules.relay.service, 'messages')).toBe(modules.relay.messages);
    expect(held(modules.webhooks.service, 'mailer')).toBe(modules.account.mailer);
    expect(held(modules.delisting.service, 'mailer')).toBe(modules.account.mailer);
  });
});
