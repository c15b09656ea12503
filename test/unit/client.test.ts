import { describe, expect, it } from 'vitest';
import { createTrsClient, retryAfterSeconds, retryingFetch } from '../../clients/typescript/src/index.js';

/** A fake server: answers in turn, recording each request it got. */
function scripted(answers: (() => Response)[]) {
  const seen: { url: string; key: string | null; body: string }[] = [];
  const send = async (request: Request) => {
    seen.push({ url: request.url, key: request.headers.get('x-key'), body: await request.text() });
    return answers[Math.min(seen.length - 1, answers.length - 1)]!();
  };
  return { send, seen };
}
const tooMany = (retryAfter?: string) => () =>
  new Response('{"data":null}', { status: 429, headers: retryAfter === undefined ? {} : { 'Retry-After': retryAfter } });
const ok = () => new Response('{"data":{"ok":true}}', { status: 200, headers: { 'content-type': 'application/json' } });

describe('the typed client', () => {
  it('sends the key as X-Key and retries a 429 after its Retry-After, with the same body', async () => {
    const server = scripted([tooMany('2'), ok]);
    const waits: number[] = [];
    const trs = createTrsClient({ baseUrl: 'http://trs.test/api/v2/', key: 'trs_k', fetch: server.send, sleep: async (ms) => void waits.push(ms) });
    const { response } = await trs.POST('/report', { body: { ip: '203.0.113.9', categories: [18] } as never });
    expect(response.status).toBe(200);
    expect(waits).toEqual([2000]);
    expect(server.seen.map((s) => s.url)).toEqual(['http://trs.test/api/v2/report', 'http://trs.test/api/v2/report']);
    expect(server.seen.every((s) => s.key === 'trs_k' && s.body === server.seen[0]!.body && s.body.includes('203.0.113.9'))).toBe(true);
  });

  it('gives up after `max` retries and returns the last 429', async () => {
    const server = scripted([tooMany('1')]);
    const send = retryingFetch(server.send, { max: 3 }, async () => undefined);
    expect((await send(new Request('http://trs.test/x'))).status).toBe(429);
    expect(server.seen).toHaveLength(4);
  });

  it('does not wait for a Retry-After beyond the limit, nor without one', async () => {
    for (const answer of [tooMany('3600'), tooMany()]) {
      const server = scripted([answer, ok]);
      const send = retryingFetch(server.send, { maxWaitSeconds: 60 }, async () => expect.unreachable());
      expect((await send(new Request('http://trs.test/x'))).status).toBe(429);
      expect(server.seen).toHaveLength(1);
    }
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-11-20T12:00:00Z');
    expect(retryAfterSeconds('7', now)).toBe(7);
    expect(retryAfterSeconds('Fri, 20 Nov 2026 12:00:30 GMT', now)).toBe(30);
    expect(retryAfterSeconds('soon', now)).toBeUndefined();
    expect(retryAfterSeconds(null, now)).toBeUndefined();
  });
});
