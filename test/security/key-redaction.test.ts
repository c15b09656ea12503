import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redactLine, redactUrl } from '../../src/logging.js';
import { rawCall } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * Finding 5 (MEDIUM): `?%6Bey=trs_…` authenticated as `key` and was logged in clear, because the
 * log filter matched a literal `key=` only. Keys are now redacted by value (anything shaped like
 * a key, wherever it stands, after decoding) and by name in any case and encoding.
 */
let s: TestServer;
let key: string;

beforeAll(async () => {
  s = await startTestServer();
  key = (await s.createKey('professional')).key;
});
afterAll(async () => {
  await s?.close();
});

const percentAll = (text: string) => [...text].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`).join('');

/** Decodes every percent-escape of a log line, repeatedly, so that no encoding hides a key. */
function decoded(line: string): string {
  let current = line;
  for (let i = 0; i < 4; i++) current = current.replace(/(%[0-9A-Fa-f]{2})+/g, (run) => { try { return decodeURIComponent(run); } catch { return run; } });
  return current;
}

describe('keys never reach a log line', () => {
  it('in any spelling of the query parameter, in paths and in other parameters', async () => {
    const secret = key.slice(12);
    const paths = [
      `/api/v2/verify-key?%6Bey=${key}`,
      `/api/v2/verify-key?k%65y=${key}`,
      `/api/v2/verify-key?KEY=${key}`,
      `/api/v2/verify-key?Key=${key}&key=${key}`,
      `/api/v2/verify-key?key=${key}&key=${key}`,
      `/api/v2/verify-key?key=${percentAll(key)}`,
      `/api/v2/verify-key?key=${encodeURIComponent(percentAll(key))}`,
      `/api/v2/verify-key?note=${key}`,
      `/api/v2/verify-key?${key}`,
      `/api/v2/${key}`,
      `/api/v2/check?ip=8.8.8.8&%6B%65%79=${key}`,
      `/metrics?key=${key}`,
    ];
    const statuses: number[] = [];
    for (const path of paths) statuses.push((await rawCall(s.origin, path)).status);
    // The encoded name is the parameter `key`: it authenticates, and still never prints.
    expect(statuses[0]).toBe(200);
    await rawCall(s.origin, '/api/v2/verify-key', { headers: { 'X-Key': key, Authorization: `Bearer ${key}`, Referer: `https://x.test/?key=${key}` } });
    await new Promise((r) => setTimeout(r, 50));
    const lines = s.logs.filter((l) => l.includes('request completed'));
    expect(lines.length).toBeGreaterThanOrEqual(paths.length);
    for (const line of s.logs) {
      expect(line).not.toContain(secret);
      expect(decoded(line)).not.toContain(secret);
    }
    expect(lines.some((l) => l.includes('[redacted]'))).toBe(true);
  });
});

describe('redaction functions', () => {
  const k = 'trs_' + 'A'.repeat(43);
  it('redacts by name in any case or encoding, and by value', () => {
    expect(redactUrl(`/x?%6Bey=${k}&ip=1`)).toBe('/x?%6Bey=[redacted]&ip=1');
    expect(redactUrl(`/x?KEY=abc`)).toBe('/x?KEY=[redacted]');
    expect(redactUrl(`/x?other=${k}`)).toBe('/x?other=[redacted]');
    expect(redactUrl(`/x?other=${percentAll(k)}`)).toBe('/x?other=[redacted]');
    expect(redactUrl(`/x/${k}/y`)).toBe('/x/[redacted]/y');
    expect(redactUrl('/x?ip=8.8.8.8&verbose=true')).toBe('/x?ip=8.8.8.8&verbose=true');
  });
  it('leaves the shown prefix of a key (trs_ and 8 characters) alone, and catches anything longer', () => {
    expect(redactLine('key trs_AbCdEfGh listed')).toBe('key trs_AbCdEfGh listed');
    expect(redactLine(`{"msg":"x ${k} y"}`)).toBe('{"msg":"x [redacted] y"}');
  });
});
