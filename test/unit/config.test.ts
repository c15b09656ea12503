import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('loadConfig', () => {
  it('has defaults for everything', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 8080,
      host: '0.0.0.0',
      databaseUrl: undefined,
      dataDir: './.data',
      trustProxy: false,
      logLevel: 'info',
      validateResponses: true,
    });
  });

  it('reads TRUST_PROXY as Express does', () => {
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8' }).trustProxy).toEqual(['loopback', '10.0.0.0/8']);
  });

  it('reads DATABASE_DIRECT_URL and the comma-separated DATABASE_REPLICA_URL, refusing what is not a postgres URL', () => {
    expect(loadConfig({})).toMatchObject({ databaseDirectUrl: undefined, databaseReplicaUrls: [] });
    const config = loadConfig({
      DATABASE_URL: 'postgres://trs@pgbouncer:6432/trs',
      DATABASE_DIRECT_URL: 'postgres://trs@db:5432/trs',
      DATABASE_REPLICA_URL: ' postgres://trs@replica1/trs, postgresql://trs@replica2/trs ,',
    });
    expect(config.databaseDirectUrl).toBe('postgres://trs@db:5432/trs');
    expect(config.databaseReplicaUrls).toEqual(['postgres://trs@replica1/trs', 'postgresql://trs@replica2/trs']);
    expect(() => loadConfig({ DATABASE_REPLICA_URL: 'postgres://a/trs,mysql://b/trs' })).toThrow(/DATABASE_REPLICA_URL/);
    expect(() => loadConfig({ DATABASE_DIRECT_URL: 'db:5432' })).toThrow(/DATABASE_DIRECT_URL/);
  });

  it('turns response validation off in production unless asked', () => {
    expect(loadConfig({ NODE_ENV: 'production' }).validateResponses).toBe(false);
    expect(loadConfig({ NODE_ENV: 'production', VALIDATE_RESPONSES: 'true' }).validateResponses).toBe(true);
  });

  it('fails with a message naming every bad variable', () => {
    expect(() => loadConfig({ PORT: 'eighty', DATABASE_URL: 'mysql://x', LOG_LEVEL: 'loud' })).toThrow(ConfigError);
    try {
      loadConfig({ PORT: 'eighty', DATABASE_URL: 'mysql://x', LOG_LEVEL: 'loud' });
    } catch (err) {
      const message = (err as Error).message;
      expect(message).toContain('PORT');
      expect(message).toContain('DATABASE_URL');
      expect(message).toContain('LOG_LEVEL');
    }
  });
});

describe('loadConfig: relay transports and SMS providers', () => {
  /** The ConfigError message of `env`, which must fail. */
  const problems = (env: NodeJS.ProcessEnv): string => {
    try {
      loadConfig(env);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    }
    throw new Error('the configuration was accepted');
  };
  const TWILIO = { TWILIO_ACCOUNT_SID: `AC${'0a'.repeat(16)}`, TWILIO_AUTH_TOKEN: 'tw-token-123', TWILIO_FROM: '+15005550006' };
  const VONAGE = { VONAGE_API_KEY: 'a1b2c3d4', VONAGE_API_SECRET: 'v-secret-1', VONAGE_FROM: 'Example' };
  const PLIVO = { PLIVO_AUTH_ID: 'MAODUZYTQ0Y2FMYJBLOW', PLIVO_AUTH_TOKEN: 'p-token-1', PLIVO_FROM: '+14155550100' };

  it('has no SMS provider and no mail transport by default', () => {
    expect(loadConfig({}).relay).toMatchObject({ sms: undefined, mail: undefined });
  });

  it('keeps RELAY_SMS_URL alone meaning the generic webhook, with the default timeout', () => {
    expect(loadConfig({ RELAY_SMS_URL: 'https://sms.example.net/send', RELAY_SMS_TOKEN: 't0ken', RELAY_SMS_SENDER: 'Example' }).relay.sms).toEqual({
      provider: 'webhook',
      url: 'https://sms.example.net/send',
      token: 't0ken',
      sender: 'Example',
      timeoutMs: 10_000,
    });
    expect(problems({ RELAY_SMS_URL: 'https://sms.example.net/send' })).toContain('RELAY_SMS_TOKEN: required when RELAY_SMS_URL is set');
    expect(problems({ RELAY_SMS_PROVIDER: 'webhook' })).toContain('RELAY_SMS_URL: required when RELAY_SMS_PROVIDER is webhook');
  });

  it('refuses an unknown provider', () => {
    expect(problems({ RELAY_SMS_PROVIDER: 'carrier-pigeon' })).toContain('RELAY_SMS_PROVIDER');
  });

  it('reads Twilio, with the receipt URL, the timeout and a regional API base', () => {
    const config = loadConfig({
      RELAY_SMS_PROVIDER: 'twilio',
      ...TWILIO,
      TWILIO_API_BASE: 'https://api.dublin.ie1.twilio.com/',
      RELAY_RECEIPT_BASE_URL: 'https://relay.example.com/',
      RELAY_SMS_TIMEOUT_SECONDS: '2.5',
    });
    expect(config.relay.sms).toEqual({
      provider: 'twilio',
      accountSid: TWILIO.TWILIO_ACCOUNT_SID,
      authToken: 'tw-token-123',
      from: '+15005550006',
      messagingServiceSid: undefined,
      apiBase: 'https://api.dublin.ie1.twilio.com',
      receiptUrl: 'https://relay.example.com/webhooks/sms/twilio',
      timeoutMs: 2_500,
    });
  });

  it("names each missing Twilio variable, and takes a Messaging Service as the sender", () => {
    const message = problems({ RELAY_SMS_PROVIDER: 'twilio' });
    expect(message).toContain('TWILIO_ACCOUNT_SID: required when RELAY_SMS_PROVIDER is twilio');
    expect(message).toContain('TWILIO_AUTH_TOKEN: required when RELAY_SMS_PROVIDER is twilio');
    expect(message).toContain('TWILIO_FROM or TWILIO_MESSAGING_SERVICE_SID: one is required');
    expect(problems({ RELAY_SMS_PROVIDER: 'twilio', ...TWILIO, TWILIO_ACCOUNT_SID: 'AC123' })).toContain(
      'TWILIO_ACCOUNT_SID: must be AC followed by 32 hexadecimal digits',
    );
    const { TWILIO_FROM: _, ...withoutFrom } = TWILIO;
    expect(loadConfig({ RELAY_SMS_PROVIDER: 'twilio', ...withoutFrom, TWILIO_MESSAGING_SERVICE_SID: `MG${'1'.repeat(32)}` }).relay.sms).toMatchObject({
      messagingServiceSid: `MG${'1'.repeat(32)}`,
      from: undefined,
    });
  });

  it('never echoes the value of a variable that may hold a credential', () => {
    const message = problems({
      RELAY_SMS_PROVIDER: 'twilio',
      ...TWILIO,
      TWILIO_AUTH_TOKEN: '',
      TWILIO_API_BASE: 'https://user:hunter2@api.twilio.com',
      DATABASE_URL: 'mysql://root:s3cr3t@db',
      PORT: 'eighty',
    });
    expect(message).toContain('TWILIO_API_BASE');
    expect(message).toContain('DATABASE_URL');
    expect(message).not.toContain('hunter2');
    expect(message).not.toContain('s3cr3t');
    expect(message).toContain('PORT: ');
    expect(message).toContain('(got "eighty")');
  });

  it('sends credentials in plain http to loopback only', () => {
    expect(problems({ RELAY_SMS_PROVIDER: 'twilio', ...TWILIO, TWILIO_API_BASE: 'http://twilio-proxy.internal' })).toContain(
      'TWILIO_API_BASE: must be an https:// URL without query (http:// only on loopback)',
    );
    expect(loadConfig({ RELAY_SMS_PROVIDER: 'twilio', ...TWILIO, TWILIO_API_BASE: 'http://127.0.0.1:4010' }).relay.sms).toMatchObject({
      apiBase: 'http://127.0.0.1:4010',
    });
  });

  it('reads Vonage, and wants the signature secret when receipts are asked for', () => {
    expect(loadConfig({ RELAY_SMS_PROVIDER: 'vonage', ...VONAGE }).relay.sms).toEqual({
      provider: 'vonage',
      apiKey: 'a1b2c3d4',
      apiSecret: 'v-secret-1',
      from: 'Example',
      apiBase: undefined,
      receiptUrl: undefined,
      receiptSignature: undefined,
      timeoutMs: 10_000,
    });
    const message = problems({ RELAY_SMS_PROVIDER: 'vonage' });
    for (const name of ['VONAGE_API_KEY', 'VONAGE_API_SECRET', 'VONAGE_FROM']) expect(message).toContain(`${name}: required when RELAY_SMS_PROVIDER is vonage`);
    expect(problems({ RELAY_SMS_PROVIDER: 'vonage', ...VONAGE, RELAY_RECEIPT_BASE_URL: 'https://relay.example.com' })).toContain(
      'VONAGE_SIGNATURE_SECRET: required when RELAY_RECEIPT_BASE_URL is set',
    );
    expect(
      loadConfig({
        RELAY_SMS_PROVIDER: 'vonage',
        ...VONAGE,
        RELAY_RECEIPT_BASE_URL: 'https://relay.example.com',
        VONAGE_SIGNATURE_SECRET: 'sig-secret',
        VONAGE_SIGNATURE_METHOD: 'sha256',
      }).relay.sms,
    ).toMatchObject({ receiptUrl: 'https://relay.example.com/webhooks/sms/vonage', receiptSignature: { secret: 'sig-secret', method: 'sha256' } });
    expect(problems({ RELAY_SMS_PROVIDER: 'vonage', ...VONAGE, VONAGE_SIGNATURE_METHOD: 'crc32' })).toContain('VONAGE_SIGNATURE_METHOD');
  });

  it('reads Plivo, with exactly one of a number and a Powerpack', () => {
    expect(loadConfig({ RELAY_SMS_PROVIDER: 'plivo', ...PLIVO }).relay.sms).toMatchObject({
      provider: 'plivo',
      authId: PLIVO.PLIVO_AUTH_ID,
      authToken: 'p-token-1',
      from: '+14155550100',
    });
    const message = problems({ RELAY_SMS_PROVIDER: 'plivo' });
    expect(message).toContain('PLIVO_AUTH_ID: required when RELAY_SMS_PROVIDER is plivo');
    expect(message).toContain('PLIVO_AUTH_TOKEN: required when RELAY_SMS_PROVIDER is plivo');
    expect(message).toContain('PLIVO_FROM, PLIVO_POWERPACK_UUID: set exactly one');
    expect(problems({ RELAY_SMS_PROVIDER: 'plivo', ...PLIVO, PLIVO_POWERPACK_UUID: 'd35f2e82-d387-427f-8594-6fa07703b6b2' })).toContain(
      'PLIVO_FROM, PLIVO_POWERPACK_UUID: set exactly one',
    );
  });

  it('reads SNS: the region is required, the SMS type is Transactional unless said otherwise', () => {
    expect(problems({ RELAY_SMS_PROVIDER: 'sns' })).toContain('AWS_REGION: required when RELAY_SMS_PROVIDER is sns');
    expect(loadConfig({ RELAY_SMS_PROVIDER: 'sns', AWS_REGION: 'eu-west-1', SNS_SENDER_ID: 'Example' }).relay.sms).toEqual({
      provider: 'sns',
      region: 'eu-west-1',
      smsType: 'Transactional',
      senderId: 'Example',
      originationNumber: undefined,
      endpoint: undefined,
      timeoutMs: 10_000,
    });
    expect(problems({ RELAY_SMS_PROVIDER: 'sns', AWS_REGION: 'eu-west-1', SNS_SENDER_ID: 'Too Long Sender' })).toContain('SNS_SENDER_ID');
    expect(problems({ RELAY_SMS_PROVIDER: 'sns', AWS_REGION: 'eu-west-1', SNS_SMS_TYPE: 'Urgent' })).toContain('SNS_SMS_TYPE');
  });

  it('puts the outboxes under DATA_DIR, refused in production unless explicitly allowed', () => {
    expect(loadConfig({ RELAY_SMS_PROVIDER: 'outbox', RELAY_MAIL_TRANSPORT: 'outbox', DATA_DIR: '/var/lib/trs' }).relay).toMatchObject({
      sms: { provider: 'outbox', dir: '/var/lib/trs/outbox/sms' },
      mail: { transport: 'outbox', dir: '/var/lib/trs/outbox/mail', from: 'Relay <relay@localhost>' },
    });
    const message = problems({ NODE_ENV: 'production', RELAY_SMS_PROVIDER: 'outbox', RELAY_MAIL_TRANSPORT: 'outbox' });
    expect(message).toContain('RELAY_SMS_PROVIDER: outbox writes messages to files instead of sending them');
    expect(message).toContain('RELAY_MAIL_TRANSPORT: outbox writes messages to files instead of sending them');
    expect(message).toContain('RELAY_OUTBOX_IN_PRODUCTION=true');
    expect(
      loadConfig({ NODE_ENV: 'production', RELAY_SMS_PROVIDER: 'outbox', RELAY_MAIL_TRANSPORT: 'outbox', RELAY_OUTBOX_IN_PRODUCTION: 'true' }).relay.sms,
    ).toMatchObject({ provider: 'outbox' });
  });

  it('keeps RELAY_SMTP_URL alone meaning SMTP', () => {
    expect(loadConfig({ RELAY_SMTP_URL: 'smtp://mail.internal:25', RELAY_MAIL_FROM: 'relay@example.com' }).relay.mail).toEqual({
      smtpUrl: 'smtp://mail.internal:25',
      from: 'relay@example.com',
      dkim: undefined,
    });
    expect(problems({ RELAY_SMTP_URL: 'smtp://mail.internal:25' })).toContain('RELAY_MAIL_FROM: required when RELAY_SMTP_URL is set');
    expect(problems({ RELAY_MAIL_TRANSPORT: 'smtp' })).toContain('RELAY_SMTP_URL: required when RELAY_MAIL_TRANSPORT is smtp');
  });
});

describe('loadConfig: password hashing and the thread pool under it', () => {
  it('hashes at most as many at once as there are cores, leaving 2 of libuv\'s threads free (4 without UV_THREADPOOL_SIZE)', () => {
    const { web, workerThreadPool } = loadConfig({});
    expect(web.hashConcurrency).toBe(Math.min(availableParallelism(), 2));
    expect(web.hashQueue).toBe(2 * web.hashConcurrency);
    expect(workerThreadPool).toBeUndefined();
    expect(loadConfig({ UV_THREADPOOL_SIZE: '64' }).web.hashConcurrency).toBe(Math.min(availableParallelism(), 62));
    expect(loadConfig({ UV_THREADPOOL_SIZE: '12', PASSWORD_HASH_CONCURRENCY: '10', PASSWORD_HASH_QUEUE: '5' }).web).toMatchObject({ hashConcurrency: 10, hashQueue: 5 });
  });

  it('refuses a concurrency the process\'s thread pool has no room for, naming UV_THREADPOOL_SIZE', () => {
    expect(() => loadConfig({ PASSWORD_HASH_CONCURRENCY: '3' })).toThrow(/PASSWORD_HASH_CONCURRENCY: 3 hashes at once .* UV_THREADPOOL_SIZE=5/);
    expect(() => loadConfig({ PASSWORD_HASH_CONCURRENCY: '6', UV_THREADPOOL_SIZE: '7' })).toThrow(ConfigError);
    expect(() => loadConfig({ PASSWORD_HASH_CONCURRENCY: '0' })).toThrow(ConfigError);
  });

  it('gives the workers of a supervisor a pool with room for the hashing, unless the operator sized it', () => {
    const supervised = loadConfig({ WORKERS: '2', PASSWORD_HASH_CONCURRENCY: '6' });
    expect(supervised.workerThreadPool).toBe(8);
    expect(supervised.web.hashConcurrency).toBe(6);
    expect(loadConfig({ WORKERS: '2' }).workerThreadPool).toBe(Math.max(4, availableParallelism() + 2));
    expect(loadConfig({ WORKERS: '2', UV_THREADPOOL_SIZE: '16' }).workerThreadPool).toBeUndefined();
  });

  it('re-sends a verification link at most every ACCOUNT_VERIFY_RESEND_MINUTES (10)', () => {
    expect(loadConfig({}).web.verifyResendMs).toBe(10 * 60_000);
    expect(loadConfig({ ACCOUNT_VERIFY_RESEND_MINUTES: '30' }).web.verifyResendMs).toBe(30 * 60_000);
    expect(() => loadConfig({ ACCOUNT_VERIFY_RESEND_MINUTES: '0' })).toThrow(ConfigError);
  });
});
