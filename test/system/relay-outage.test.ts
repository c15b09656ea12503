import { afterAll, describe, expect, it } from 'vitest';
import { call } from '../support/http.js';
import { eventually, startSmsProvider, startSmtp } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * Provider outages (issue 18): the mail server and the SMS provider stop for a while under a
 * steady send rate through two processes. Every accepted message goes out once they are back,
 * none twice; meanwhile the queue's age shows in /metrics.
 */
const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

describe('provider outage', () => {
  it('delivers every accepted mail and SMS once the providers are back, none twice, across two processes', async (ctx) => {
    let smtp = await startSmtp();
    let sms = await startSmsProvider();
    const smtpPort = smtp.port;
    const smsPort = sms.port;
    const received = { mail: [] as string[], sms: [] as string[] };
    const harvest = () => {
      received.mail.push(...smtp.received.flatMap((m) => m.envelopeTo));
      received.sms.push(...sms.requests.map((r) => String(r.body.to)));
    };
    const relay = {
      mail: { smtpUrl: smtp.url, from: 'Relay <relay@mail.example.net>' },
      sms: { url: sms.url, token: sms.token },
      smsFreeTextRoles: ['enterprise' as const],
      // Retries 1, 2, 4, 8 … s apart: enough to outlast the outage below.
      retryLimit: 10,
      retryDelaySeconds: 1,
    };
    const a = await startTestServer({ config: { relay } });
    closers.push(() => a.close());
    if (a.db.embedded) ctx.skip(); // two processes need a PostgreSQL server
    const b = await a.sibling();
    closers.push(() => b.close());
    closers.push(async () => {
      await smtp.close();
      await sms.close();
    });
    const { key } = await a.createKey('enterprise');

    const accepted = { mail: [] as string[], sms: [] as string[] };
    const refused: number[] = [];
    let i = 0;
    const sendOne = async () => {
      const n = ++i;
      const server = n % 2 ? a : b;
      const channel = n % 3 === 0 ? 'sms' : 'mail';
      const to = channel === 'mail' ? `outage${n}@example.org` : `+4915114${String(100000 + n).padStart(6, '0')}`;
      const res =
        channel === 'mail'
          ? await call(server.origin, '/api/v2/relay-mail', { key, json: { recipient: to, subject: 'Code', body_text: `Code ${n}` } })
          : await call(server.origin, '/api/v2/relay-sms', { key, json: { recipient_phone: to, message: `Code ${n}` } });
      if (res.status === 200) accepted[channel].push(to);
      else refused.push(res.status);
      // Each send a second later than the last, so the queue's age grows while nothing goes out.
      a.clock.advance(1_000);
    };
    const steady = async (ms: number) => {
      const until = Date.now() + ms;
      while (Date.now() < until) {
        await sendOne();
        await new Promise((r) => setTimeout(r, 50));
      }
    };

    await steady(1_000);
    await smtp.close();
    await sms.close();
    harvest();
    await steady(3_000);
    // Nothing could go out: the backlog and its age are visible.
    const metrics = await (await fetch(`${a.origin}/metrics`)).text();
    const oldest = Number(/trs_relay_queue_oldest_seconds\{channel="mail"\} ([\d.]+)/.exec(metrics)?.[1]);
    const depth = Number(/trs_relay_queue_depth\{channel="mail"\} (\d+)/.exec(metrics)?.[1]);
    expect(depth).toBeGreaterThan(0);
    expect(oldest).toBeGreaterThan(0);

    smtp = await startSmtp(smtpPort);
    sms = await startSmsProvider({ port: smsPort });
    await steady(1_000);
    const total = accepted.mail.length + accepted.sms.length;
    await eventually(async () => {
      const { rows } = await a.pool.query<{ n: number }>("select count(*)::int as n from relay_messages where status = 'sent'");
      return rows[0]!.n === total;
    }, 60_000);
    await new Promise((r) => setTimeout(r, 500)); // time for a duplicate to show
    harvest();

    const count = (list: string[]) => list.reduce((m, to) => m.set(to, (m.get(to) ?? 0) + 1), new Map<string, number>());
    expect(refused).toEqual([]);
    const mails = count(received.mail);
    const texts = count(received.sms);
    expect(accepted.mail.filter((to) => mails.get(to) !== 1)).toEqual([]);
    expect(accepted.sms.filter((to) => texts.get(to) !== 1).map((to) => `${to} x${texts.get(to) ?? 0}`)).toEqual([]);
    expect(received.mail.length).toBe(accepted.mail.length);
    expect(received.sms.length).toBe(accepted.sms.length);
    const { rows } = await a.pool.query<{ retried: number }>('select count(*) filter (where attempts > 1)::int as retried from relay_messages');
    expect(rows[0]!.retried).toBeGreaterThan(0);
    console.log(
      `outage: ${accepted.mail.length} mails and ${accepted.sms.length} SMS accepted through two processes; providers down 3 s; ` +
        `${rows[0]!.retried} needed retries; all delivered once; oldest queued ${oldest} s at the worst`,
    );
  }, 120_000);
});
