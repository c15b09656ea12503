import { describe, expect, it } from 'vitest';
import { EVIDENCE_MAX_BYTES, addRedactions, evidenceBytes, fitBytes, joinEvidence, redactEvidence, type Redactions } from '../../src/reputation/evidence.js';

const KEY = 'trs_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v'; // 43 key characters, as keys/service.ts makes them
const BOUNCER_KEY = 'trsb_' + 'Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2';
const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJib2IifQ.c2lnbmF0dXJlLXBhcnQ';

/** [what it is, the evidence, what must be kept (exactly), what was counted]. */
const CASES: [string, string, string, Redactions][] = [
  // fail2ban and the logs it reads: nothing to remove, the addresses and words stay.
  [
    'fail2ban ban line',
    '2026-11-28 10:00:01,123 fail2ban.actions [812]: NOTICE [sshd] Ban 203.0.113.5',
    '2026-11-28 10:00:01,123 fail2ban.actions [812]: NOTICE [sshd] Ban 203.0.113.5',
    {},
  ],
  [
    'sshd failed password (the word is no secret)',
    'Nov 28 10:00:00 host sshd[1234]: Failed password for invalid user admin from 203.0.113.5 port 52144 ssh2',
    'Nov 28 10:00:00 host sshd[1234]: Failed password for invalid user admin from 203.0.113.5 port 52144 ssh2',
    {},
  ],
  [
    'sshd on IPv6',
    'sshd[99]: Invalid user oracle from 2001:db8::7 port 4242',
    'sshd[99]: Invalid user oracle from 2001:db8::7 port 4242',
    {},
  ],
  [
    'dovecot login with the user an e-mail address',
    'dovecot: imap-login: Disconnected (auth failed, 1 attempts in 2 secs): user=<bob@example.com>, method=PLAIN, rip=203.0.113.5, lip=198.51.100.2',
    'dovecot: imap-login: Disconnected (auth failed, 1 attempts in 2 secs): user=<[redacted:email]>, method=PLAIN, rip=203.0.113.5, lip=198.51.100.2',
    { email: 1 },
  ],
  [
    'postfix SASL failure with two addresses',
    'postfix/smtpd[77]: NOQUEUE: reject: RCPT from unknown[203.0.113.5]: 554 5.7.1 <alice@example.org>: Relay access denied; from=<spam@bad.example> to=<alice@example.org>',
    'postfix/smtpd[77]: NOQUEUE: reject: RCPT from unknown[203.0.113.5]: 554 5.7.1 <[redacted:email]>: Relay access denied; from=<[redacted:email]> to=<[redacted:email]>',
    { email: 3 },
  ],
  [
    'nginx access log with a password in the query',
    '203.0.113.5 - - [28/Nov/2026:10:00:00 +0000] "GET /wp-login.php?log=admin&pwd=hunter2&redirect_to=%2F HTTP/1.1" 401 12',
    '203.0.113.5 - - [28/Nov/2026:10:00:00 +0000] "GET /wp-login.php?log=admin&pwd=[redacted:secretParameter]&redirect_to=%2F HTTP/1.1" 401 12',
    { secretParameter: 1 },
  ],
  [
    'query parameters named like keys and tokens, any case',
    'GET /api?API_KEY=abc123&access_token=xyz&Signature=deadbeef&X-Amz-Credential=AKIA1&page=2',
    'GET /api?API_KEY=[redacted:secretParameter]&access_token=[redacted:secretParameter]&Signature=[redacted:secretParameter]&X-Amz-Credential=[redacted:secretParameter]&page=2',
    { secretParameter: 4 },
  ],
  [
    'a form body at the start of a line',
    'password=s3cret&username=root',
    'password=[redacted:secretParameter]&username=root',
    { secretParameter: 1 },
  ],
  [
    'a word ending like a secret name is not one',
    'GET /?monkey=1&passport=2&keyboard=3',
    'GET /?monkey=1&passport=2&keyboard=3',
    {},
  ],
  [
    'userinfo in a URL',
    'fetched ftp://admin:Pa55w0rd@files.example.net/pub and https://ghp_token123@github.example/x',
    'fetched ftp://[redacted:urlCredentials]@files.example.net/pub and https://[redacted:urlCredentials]@github.example/x',
    { urlCredentials: 2 },
  ],
  [
    'Authorization headers: the scheme stays',
    'Authorization: Basic YWRtaW46YWRtaW4=\nProxy-Authorization: Digest username="x", response="y"\nauthorization: raw-secret-value\n{"authorization":"Bearer abc.def","path":"/"}',
    'Authorization: Basic [redacted:authorization]\nProxy-Authorization: Digest [redacted:authorization]\nauthorization: [redacted:authorization]\n{"authorization":"Bearer [redacted:authorization]","path":"/"}',
    { authorization: 4 },
  ],
  [
    'a bearer token outside a header, and a JWT in a URL',
    `curl -H 'X-Token: none' sent Bearer abcdefghijklmnop.qrs then /cb?state=1#id=${JWT}`,
    `curl -H 'X-Token: [redacted:secretField]' sent Bearer [redacted:bearer] then /cb?state=1#id=[redacted:jwt]`,
    { bearer: 1, jwt: 1, secretField: 1 },
  ],
  [
    'Cookie and Set-Cookie values, names kept',
    'Cookie: PHPSESSID=abc123; wordpress_logged_in=admin%7C1700\nSet-Cookie: sid=xyz; Path=/; HttpOnly',
    'Cookie: PHPSESSID=[redacted:cookie]; wordpress_logged_in=[redacted:cookie]\nSet-Cookie: sid=[redacted:cookie]; Path=[redacted:cookie]; HttpOnly',
    { cookie: 2 },
  ],
  [
    'JSON fields holding secrets',
    '{"user":"root","password":"hunter\\"2","client_secret": "abc", "ok": true}',
    '{"user":"root","password":"[redacted:secretField]","client_secret": "[redacted:secretField]", "ok": true}',
    { secretField: 2 },
  ],
  [
    'key-value log fields',
    'login attempt user=root token: 0f9e8d7c6b api-key: 1234',
    'login attempt user=root token: [redacted:secretField] api-key: [redacted:secretField]',
    { secretField: 2 },
  ],
  [
    "this server's own keys, wherever they stand",
    `GET /api/v2/check?key=${KEY} and X-Key ${BOUNCER_KEY} and ${KEY.toUpperCase()}`,
    'GET /api/v2/check?key=[redacted:apiKey] and X-Key [redacted:apiKey] and [redacted:apiKey]',
    { apiKey: 3 },
  ],
  [
    'a PEM private key',
    'leaked:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\nend',
    'leaked:\n[redacted:privateKey]\nend',
    { privateKey: 1 },
  ],
  [
    'line ends and control characters',
    'a\r\nb\rc\u0000d\u001b[31me\tf',
    'a\nb\ncd[31me\tf',
    {},
  ],
];

describe('redactEvidence', () => {
  it.each(CASES)('%s', (_name, input, kept, counted) => {
    const out = redactEvidence(input);
    expect(out.text).toBe(kept);
    const expected = Object.fromEntries(Object.entries(counted).filter(([, n]) => n));
    expect(out.redactions).toEqual(expected);
    expect(out.truncated).toBe(false);
  });

  it('is stable: redacting what it kept removes nothing more', () => {
    for (const [, input] of CASES) {
      const once = redactEvidence(input);
      const twice = redactEvidence(once.text);
      expect({ input, text: twice.text }).toEqual({ input, text: once.text });
      expect({ input, r: twice.redactions }).toEqual({ input, r: {} });
    }
  });

  it('never keeps more than 16 KiB, cutting at a character when the markers grew it', () => {
    // 16,384 bytes of short addresses: each marker is longer than the address it replaces.
    const line = 'x@e.io\n';
    const input = line.repeat(Math.floor(EVIDENCE_MAX_BYTES / line.length));
    expect(evidenceBytes(input)).toBeLessThanOrEqual(EVIDENCE_MAX_BYTES);
    const out = redactEvidence(input);
    expect(out.truncated).toBe(true);
    expect(evidenceBytes(out.text)).toBeLessThanOrEqual(EVIDENCE_MAX_BYTES);
    expect(out.text).not.toMatch(/@e\.io/);
    expect(out.redactions.email).toBe(Math.floor(EVIDENCE_MAX_BYTES / line.length));
  });
});

describe('evidence helpers', () => {
  it('fitBytes never splits a character', () => {
    expect(fitBytes('aé€😀', 1)).toBe('a');
    expect(fitBytes('aé€😀', 2)).toBe('a');
    expect(fitBytes('aé€😀', 3)).toBe('aé');
    expect(fitBytes('aé€😀', 9)).toBe('aé€');
    expect(fitBytes('aé€😀', 10)).toBe('aé€😀');
  });

  it('joinEvidence joins while the whole fits, else keeps the earlier', () => {
    expect(joinEvidence(null, 'b')).toBe('b');
    expect(joinEvidence('a', null)).toBe('a');
    expect(joinEvidence('a', 'b')).toBe('a\nb');
    const big = 'x'.repeat(EVIDENCE_MAX_BYTES - 1);
    expect(joinEvidence(big, 'y')).toBe(big);
  });

  it('addRedactions sums by kind', () => {
    expect(addRedactions({ email: 1 }, { email: 2, cookie: 1 })).toEqual({ email: 3, cookie: 1 });
  });
});
