import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../../src/db/connect.js';
import { KeyService } from '../../src/keys/service.js';
import { startBalancer } from '../support/balancer.js';
import { createTestDatabase } from '../support/database.js';
import { serverProcesses } from '../support/processes.js';
import { eventually, startSmsProvider, startSmtp } from '../support/relay-fakes.js';

/**
 * The relay across real server processes, as an operator runs them: a burst of mail and SMS
 * through a load balancer to two processes, one of which is stopped with SIGTERM in the middle.
 * Every message answered 200 is delivered exactly once (by the process that took it before it
 * stopped, or by the other one), none is lost, none is sent twice.
 */
const processes = serverProcesses();
const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  processes.killAll();
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe('relay across processes', () => {
  it('SIGTERM to one of two processes during a burst loses no message and sends none twice', async (ctx) => {
    const db = await createTestDatabase();
    cleanups.push(() => db.drop());
    if (db.embedded) ctx.skip(); // two processes need a PostgreSQL server
    const smtp = await startSmtp();
    const sms = await startSmsProvider({ delayMs: 50 });
    cleanups.push(() => smtp.close());
    cleanups.push(() => sms.close());
    const env = {
      DATABASE_URL: db.url,
      DATA_DIR: mkdtempSync(path.join(tmpdir(), 'trs-relay-procs-')),
      // Longer than the balancer takes to see /readyz fail twice on a loaded machine (docs/operations.md:
      // the drain must outlast the balancer's health checks).
      SHUTDOWN_DRAIN_SECONDS: '3',
      RELAY_SMTP_URL: smtp.url,
      RELAY_MAIL_FROM: 'Relay <relay@mail.example.net>',
      RELAY_SMS_PROVIDER: 'webhook',
      RELAY_SMS_URL: sms.url,
      RELAY_SMS_TOKEN: sms.token,
      // The burst sends free text (templates only is the default).
      RELAY_SMS_FREE_TEXT_ROLES: 'enterprise',
      RELAY_MAIL_CONCURRENCY: '4',
      RELAY_SMS_CONCURRENCY: '4',
    };
    const [a, b] = [await processes.start(env), await processes.start(env)];
    const admin = await connectDatabase({ databaseUrl: db.url, dataDir: '.data', dbPoolMax: 2 }, pino({ level: 'silent' }), { migrate: 'skip' });
    const key = (await new KeyService(admin.orm.em).create({ role: 'enterprise' })).key;
    await admin.close();
    const balancer = await startBalancer([a.origin, b.origin]);
    cleanups.push(() => balancer.close());

    const accepted = { mail: [] as string[], sms: [] as string[] };
    const failures: string[] = [];
    let n = 0;
    let stopped = false;
    const sender = async () => {
      while (!stopped) {
        const i = ++n;
        const channel = i % 2 ? 'mail' : 'sms';
        const to = channel === 'mail' ? `burst${i}@example.org` : `+4915116${String(100000 + i).padStart(6, '0')}`;
        // Eight sites: a burst on an idle machine passes one site's daily cap of 1,000 messages.
        const site_url = `https://shop${i % 8}.example.com`;
        const body = channel === 'mail' ? { recipient: to, subject: 'Code', body_text: `Code ${i}`, site_url } : { recipient_phone: to, message: `Code ${i}`, site_url };
        try {
          const res = await fetch(`${balancer.origin}/api/v2/relay-${channel}`, {
            method: 'POST',
            headers: { 'X-Key': key, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
          await res.arrayBuffer();
          if (res.status === 200) accepted[channel].push(to);
          else failures.push(`${channel} ${res.status}`);
        } catch (err) {
          failures.push(String((err as { cause?: { code?: string } }).cause?.code ?? err));
        }
      }
    };
    const running = Promise.all(Array.from({ length: 8 }, sender));
    await new Promise((r) => setTimeout(r, 1_500));
    a.child.kill('SIGTERM');
    const code = await a.exited;
    await new Promise((r) => setTimeout(r, 1_000));
    stopped = true;
    await running;

    expect(code).toBe(0);
    // A POST the balancer could not place is answered 502/503 by it, never silently dropped.
    expect(failures).toEqual([]);
    await eventually(() => smtp.received.length >= accepted.mail.length && sms.requests.length >= accepted.sms.length, 60_000);
    await new Promise((r) => setTimeout(r, 1_000)); // time for a duplicate to show
    const count = (list: string[]) => list.reduce((m, to) => m.set(to, (m.get(to) ?? 0) + 1), new Map<string, number>());
    const mails = count(smtp.received.flatMap((m) => m.envelopeTo));
    const texts = count(sms.requests.map((r) => String(r.body.to)));
    expect(accepted.mail.filter((to) => mails.get(to) !== 1)).toEqual([]);
    expect(accepted.sms.filter((to) => texts.get(to) !== 1)).toEqual([]);
    expect(smtp.received.length).toBe(accepted.mail.length);
    expect(sms.requests.length).toBe(accepted.sms.length);
    const direct = new pg.Client({ connectionString: db.url });
    await direct.connect();
    const { rows } = await direct.query<{ status: string; n: number }>('select status, count(*)::int as n from relay_messages group by status');
    await direct.end();
    expect(rows).toEqual([{ status: 'sent', n: accepted.mail.length + accepted.sms.length }]);
    console.log(
      `relay SIGTERM: ${accepted.mail.length} mails and ${accepted.sms.length} SMS accepted through two processes, one stopped mid-burst; ` +
        'each delivered exactly once',
    );
  }, 180_000);
});
