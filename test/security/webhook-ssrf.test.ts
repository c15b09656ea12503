import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, resolveTarget } from '../../src/webhooks/sender.js';
import { allowRanges, ANSWER_READ_BYTES, ATTEMPT_TIMEOUT_MS } from '../../src/webhooks/rules.js';
import { call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { startReceiver } from '../support/webhook-receiver.js';

/**
 * Server-side request forgery through webhooks: a webhook URL may not reach the server's own
 * network. At subscription and again at each delivery the host is resolved (every address)
 * and refused unless public (src/address.ts) or inside WEBHOOK_ALLOW_RANGES; the connection
 * goes to the checked address (DNS rebinding cannot swap it); redirects are not followed.
 */
let open: TestServer; // no WEBHOOK_ALLOW_RANGES: production's default
let allowing: TestServer; // 127.0.0.1/32 allowed, same database
let key: string;

beforeAll(async () => {
  open = await startTestServer();
  allowing = await open.sibling({ webhooks: { allowRanges: ['127.0.0.1/32'] } });
  key = (await open.createKey('enterprise')).key;
});
afterAll(async () => {
  await allowing?.close();
  await open?.close();
});

const subscribe = (s: TestServer, url: string) => call(s.origin, '/api/v2/webhooks', { method: 'POST', key, json: { url, events: ['address.listed'] } });

describe('webhook URLs that reach inside are refused at subscription', () => {
  const inside = [
    'https://127.0.0.1/hook',
    'https://127.1.2.3/hook',
    'https://10.0.0.1/hook',
    'https://172.16.5.4/hook',
    'https://192.168.1.1/hook',
    'https://169.254.169.254/latest/meta-data/',
    'https://100.64.0.1/hook',
    'https://0.0.0.0/hook',
    'https://224.0.0.1/hook',
    'https://240.0.0.1/hook',
    'https://255.255.255.255/hook',
    'https://[::1]/hook',
    'https://[fd00:ec2::254]/latest/meta-data/',
    'https://[fe80::1]/hook',
    'https://[::ffff:127.0.0.1]/hook',
    'https://[ff02::1]/hook',
    'https://192.0.2.10/hook',
    // Host names resolving to loopback.
    'https://localhost/hook',
    'https://localhost:8443/hook',
  ];
  for (const url of inside) {
    it(`refuses ${url} with 400 on url`, async () => {
      const res = await subscribe(open, url);
      expect(res.status).toBe(400);
      expect(res.body.meta.errors[0]).toMatchObject({ location: 'body', name: 'url' });
    });
  }

  it('refuses a name that does not resolve, credentials in the URL, and plain http to a public address', async () => {
    for (const url of ['https://no-such-host.invalid/hook', 'https://user:pass@8.8.8.8/hook', 'http://8.8.8.8/hook']) {
      expect({ url, status: (await subscribe(open, url)).status }).toEqual({ url, status: 400 });
    }
  });

  it('lets the operator allow a range (WEBHOOK_ALLOW_RANGES): the local receiver is accepted there, not elsewhere', async () => {
    expect((await subscribe(open, 'http://127.0.0.1:9/hook')).status).toBe(400);
    expect((await subscribe(allowing, 'http://127.0.0.1:9/hook')).status).toBe(201);
    // 127.0.0.2 is outside 127.0.0.1/32.
    expect((await subscribe(allowing, 'https://127.0.0.2/hook')).status).toBe(400);
  });
});

describe('at delivery', () => {
  it('checks the address again: an endpoint stored where it was allowed is refused by a server that does not allow it', async () => {
    const receiver = await startReceiver([204]);
    try {
      const made = await subscribe(allowing, `${receiver.url}/again`);
      expect(made.status).toBe(201);
      const refused = await call(open.origin, `/api/v2/webhooks/${made.body.data.id}/test`, { method: 'POST', key });
      expect(refused.status).toBe(200);
      expect(refused.body.data).toMatchObject({ delivered: false, status: null });
      expect(refused.body.data.error).toMatch(/^refused: resolves to 127\.0\.0\.1/);
      expect(receiver.received).toHaveLength(0);
    } finally {
      await receiver.close();
    }
  });

  it('does not follow a redirect (3xx is a failure)', async () => {
    const target = await startReceiver([204]);
    const redirecting = await startReceiver([302], `${target.url}/elsewhere`);
    try {
      const made = await subscribe(allowing, `${redirecting.url}/hook`);
      const res = await call(allowing.origin, `/api/v2/webhooks/${made.body.data.id}/test`, { method: 'POST', key });
      expect(res.body.data).toMatchObject({ delivered: false, status: 302, error: 'redirect (302) not followed' });
      expect(redirecting.received).toHaveLength(1);
      expect(target.received).toHaveLength(0);
    } finally {
      await target.close();
      await redirecting.close();
    }
  });

  it('refuses a host when any of its addresses is inside (one public record does not let a private one through)', async () => {
    const lookup = (async () => [
      { address: '8.8.8.8', family: 4 },
      { address: '127.0.0.1', family: 4 },
    ]) as never;
    const resolved = await resolveTarget(new URL('https://rebind.example/hook'), [], lookup);
    expect(resolved).toMatchObject({ ok: false });
    const publicOnly = await resolveTarget(new URL('https://good.example/hook'), [], (async () => [{ address: '8.8.8.8', family: 4 }]) as never);
    expect(publicOnly).toEqual({ ok: true, address: '8.8.8.8', family: 4 });
  });

  it('connects to the checked address, never asking DNS again (no rebinding between check and connection)', async () => {
    const receiver = await startReceiver([204]);
    try {
      const port = new URL(receiver.url).port;
      // The name does not resolve at all: the connection reaches the receiver only through the pinned address.
      const url = new URL(`http://rebinding.invalid:${port}/pinned`);
      const resolved = await resolveTarget(url, allowRanges(['127.0.0.1/32']), (async () => [{ address: '127.0.0.1', family: 4 }]) as never);
      expect(resolved.ok).toBe(true);
      const attempt = await post(url, resolved as { address: string; family: 4 }, {}, '{}');
      expect(attempt).toEqual({ delivered: true, status: 204, error: null });
      expect(receiver.received[0]!.headers.host).toBe(`rebinding.invalid:${port}`);
    } finally {
      await receiver.close();
    }
  });

  it('gives up on a receiver that holds the connection (no answer, or an answer that never ends) at the timeout, and reads a few KB at most', async () => {
    expect(ATTEMPT_TIMEOUT_MS).toBe(10_000);
    const held: import('node:http').ServerResponse[] = [];
    let sent = 0;
    const server: Server = createServer((req, res) => {
      req.resume();
      if (req.url === '/silent') return void held.push(res); // reads the request, never answers
      if (req.url === '/trickle') {
        res.writeHead(200);
        res.write('o'); // a success status, then a body that never ends
        return void held.push(res);
      }
      // /flood: a body far past what is read; the connection is cut after ANSWER_READ_BYTES
      res.writeHead(500);
      const chunk = Buffer.alloc(16 * 1024, 120);
      const pump = () => {
        while (sent < 64 * 1024 * 1024 && res.write(chunk)) sent += chunk.length;
        if (sent < 64 * 1024 * 1024) res.once('drain', pump);
        else res.end();
      };
      res.on('close', () => res.removeAllListeners('drain'));
      pump();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const target = { address: '127.0.0.1', family: 4 as const };
      for (const path of ['/silent', '/trickle']) {
        const started = performance.now();
        const attempt = await post(new URL(`http://127.0.0.1:${port}${path}`), target, {}, '{}', 300);
        const took = performance.now() - started;
        expect({ path, attempt }).toEqual({ path, attempt: { delivered: false, status: null, error: 'no answer within 0.3 s' } });
        expect(took).toBeGreaterThanOrEqual(290);
        expect(took).toBeLessThan(5_000);
      }
      const flooded = await post(new URL(`http://127.0.0.1:${port}/flood`), target, {}, '{}', 5_000);
      expect(flooded).toEqual({ delivered: false, status: 500, error: 'answered 500' });
      expect(sent).toBeLessThan(64 * 1024 * 1024);
      expect(ANSWER_READ_BYTES).toBe(4_096);
    } finally {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
