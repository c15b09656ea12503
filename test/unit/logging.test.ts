import { runInNewContext } from 'node:vm';
import { Writable } from 'node:stream';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from '../../src/db/errors.js';
import { createLogger, incidentLogger, serializeError } from '../../src/logging.js';

function capture() {
  const lines: string[] = [];
  const sink = new Writable({ write: (chunk, _e, done) => (lines.push(chunk.toString()), done()) });
  return { logger: createLogger('info', sink), lines };
}

describe('error log lines', () => {
  it('keep type, message, code and stack of a pg error, never its client', async () => {
    const client = new pg.Client({ connectionString: 'postgres://nobody@127.0.0.1:1/none', connectionTimeoutMillis: 500 });
    const err = await client.connect().then(() => undefined, (e: unknown) => e as Error);
    // As pg-boss and pools report errors: with the client hanging off them.
    Object.assign(err!, { client, pool: { clients: [client], options: { password: 'secret-password-123' } } });
    const { logger, lines } = capture();
    logger.error({ err }, 'relay queue error');
    const line = JSON.parse(lines[0]!);
    expect(line.err).toMatchObject({ type: 'Error', code: 'ECONNREFUSED', message: expect.stringContaining('ECONNREFUSED') });
    expect(Object.keys(line.err).sort()).toEqual(['code', 'errno', 'message', 'stack', 'syscall', 'type']);
    expect(lines[0]!.length).toBeLessThan(2_000);
    expect(lines[0]).not.toContain('secret-password-123');
  });

  it('know an error made in another realm (a vm context) as an error', () => {
    const foreign = runInNewContext("Object.assign(new Error('duplicate key value'), { code: '23505' })") as unknown;
    expect(foreign instanceof Error).toBe(false);
    expect(serializeError(foreign)).toMatchObject({ type: 'Error', message: 'duplicate key value', code: '23505' });
  });

  it('follow causes, two deep', () => {
    const err = new Error('outer', { cause: new Error('middle', { cause: Object.assign(new Error('inner'), { code: '57P01' }) }) });
    expect(serializeError(err)).toMatchObject({ message: 'outer', cause: { message: 'middle', cause: { message: 'inner', code: '57P01' } } });
  });
});

describe('incident logging', () => {
  it('logs the first error of a kind, counts repeats within the window, and reports the count after it', () => {
    const { logger, lines } = capture();
    let now = 0;
    const incident = incidentLogger(logger, 30_000, () => now);
    const broken = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
    for (let i = 0; i < 50; i++) incident('error', 'db-pool', broken, 'connection failed');
    incident('error', 'relay-queue', broken, 'queue error');
    expect(lines).toHaveLength(2);
    now = 31_000;
    incident('error', 'db-pool', broken, 'connection failed');
    expect(lines).toHaveLength(3);
    expect(JSON.parse(lines[2]!)).toMatchObject({ component: 'db-pool', repeated: 49 });
  });
});

describe('what counts as the database being unavailable', () => {
  it.each([
    ['admin shutdown', Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' })],
    ['cannot connect now', Object.assign(new Error('the database system is starting up'), { code: '57P03' })],
    ['too many connections', Object.assign(new Error('sorry, too many clients already'), { code: '53300' })],
    ['connection failure', Object.assign(new Error('connection failure'), { code: '08006' })],
    ['serialization failure', Object.assign(new Error('could not serialize access'), { code: '40001' })],
    ['statement timeout', Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' })],
    ['a lost socket', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })],
    ['pg after a lost connection', new Error('Client has encountered a connection error and is not queryable')],
    ['pg ended', new Error('Connection terminated unexpectedly')],
    ['the pool waiting too long', new Error('timeout exceeded when trying to connect')],
    ['wrapped by the ORM', Object.assign(new Error('select …'), { name: 'DriverException', cause: Object.assign(new Error('x'), { code: '57P01' }) })],
    ['a read-only standby after a failover', Object.assign(new Error('cannot execute INSERT in a read-only transaction'), { code: '25006' })],
    ['its Unix socket gone', Object.assign(new Error('connect ENOENT /data/run/.s.PGSQL.5432'), { code: 'ENOENT', syscall: 'connect', address: '/data/run/.s.PGSQL.5432' })],
  ])('%s', (_name, err) => expect(isDatabaseUnavailable(err)).toBe(true));

  it.each([
    ['a syntax error', Object.assign(new Error('syntax error'), { code: '42601' })],
    ['a missing table', Object.assign(new Error('relation does not exist'), { code: '42P01' })],
    ['a unique violation', Object.assign(new Error('duplicate key'), { code: '23505' })],
    ['a plain bug', new TypeError('x is undefined')],
    ['a file the code reads missing', Object.assign(new Error("ENOENT: no such file or directory, open 'views/home.eta'"), { code: 'ENOENT', syscall: 'open' })],
  ])('not %s', (_name, err) => expect(isDatabaseUnavailable(err)).toBe(false));
});
