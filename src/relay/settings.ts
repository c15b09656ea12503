import path from 'node:path';
import type { SNSClientConfig } from '@aws-sdk/client-sns';
import { z } from 'zod';
import type { Role } from '../roles.js';
import { apiBase, boolean, requireAll } from '../settings.js';

/**
 * The relay's settings slice: its variables (merged into the configuration's one schema by
 * src/config.ts, which reads and checks the environment once), what they mean together
 * (`relaySettings`), and the types the relay is given them as. A settings slice imports nothing
 * of its area (.dependency-cruiser.cjs), so the configuration can stand below every area.
 */

const SMS_PROVIDERS = ['webhook', 'twilio', 'vonage', 'plivo', 'sns', 'outbox'] as const;
const VONAGE_SIGNATURE_METHODS = ['md5hash', 'md5', 'sha1', 'sha256', 'sha512'] as const satisfies readonly VonageSignatureMethod[];

/** The relay's environment variables (docs/configuration.md lists each). */
export const relayVariables = {
  RELAY_SMTP_URL: z.string().regex(/^smtps?:\/\//, 'must be an smtp:// or smtps:// URL').optional(),
  RELAY_MAIL_FROM: z.string().min(3).optional(),
  RELAY_DKIM_DOMAIN: z.string().min(1).optional(),
  RELAY_DKIM_SELECTOR: z.string().min(1).optional(),
  RELAY_DKIM_KEY_FILE: z.string().min(1).optional(),
  RELAY_MAIL_TRANSPORT: z.enum(['smtp', 'outbox']).optional(),
  RELAY_SMS_PROVIDER: z.enum(SMS_PROVIDERS).optional(),
  RELAY_SMS_URL: z.string().regex(/^https?:\/\//, 'must be an http:// or https:// URL').optional(),
  RELAY_SMS_TOKEN: z.string().min(1).optional(),
  RELAY_SMS_SENDER: z.string().min(1).max(15).optional(),
  RELAY_SMS_TIMEOUT_SECONDS: z.coerce.number().positive().max(120).default(10),
  RELAY_RECEIPT_BASE_URL: z
    .string()
    .regex(/^https?:\/\/[^/?#]+(\/[^?#]*)?$/, 'must be an http:// or https:// URL without query')
    .transform((url) => url.replace(/\/+$/, ''))
    .optional(),
  RELAY_OUTBOX_IN_PRODUCTION: boolean.optional(),
  TWILIO_ACCOUNT_SID: z.string().regex(/^AC[0-9a-fA-F]{32}$/, 'must be AC followed by 32 hexadecimal digits').optional(),
  TWILIO_AUTH_TOKEN: z.string().min(1).optional(),
  TWILIO_FROM: z.string().min(1).optional(),
  TWILIO_MESSAGING_SERVICE_SID: z.string().regex(/^MG[0-9a-fA-F]{32}$/, 'must be MG followed by 32 hexadecimal digits').optional(),
  TWILIO_API_BASE: apiBase,
  VONAGE_API_KEY: z.string().min(1).optional(),
  VONAGE_API_SECRET: z.string().min(1).optional(),
  VONAGE_FROM: z.string().min(1).max(15).optional(),
  VONAGE_API_BASE: apiBase,
  VONAGE_SIGNATURE_SECRET: z.string().min(1).optional(),
  VONAGE_SIGNATURE_METHOD: z.enum(VONAGE_SIGNATURE_METHODS).default('md5hash'),
  PLIVO_AUTH_ID: z.string().min(1).optional(),
  PLIVO_AUTH_TOKEN: z.string().min(1).optional(),
  PLIVO_FROM: z.string().min(1).optional(),
  PLIVO_POWERPACK_UUID: z.uuid('must be a UUID').optional(),
  PLIVO_API_BASE: apiBase,
  AWS_REGION: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, 'must be an AWS region such as eu-west-1').optional(),
  SNS_SMS_TYPE: z.enum(['Transactional', 'Promotional']).default('Transactional'),
  SNS_SENDER_ID: z
    .string()
    .regex(/^(?=.*[A-Za-z])[A-Za-z0-9]{3,11}$/, 'must be 3 to 11 letters and digits, at least one a letter')
    .optional(),
  SNS_ORIGINATION_NUMBER: z.string().min(1).optional(),
  SNS_API_BASE: apiBase,
  RELAY_SMS_COUNTRIES: z
    .string()
    .regex(/^[A-Z]{2}(,[A-Z]{2})*$/, 'must be ISO country codes separated by commas')
    .default('AT,AU,BE,CA,CH,CZ,DE,DK,ES,FI,FR,GB,IE,IT,JP,LU,NL,NO,NZ,PL,PT,SE,US'),
  RELAY_ENTERPRISE_MAIL_CEILING: z.coerce.number().int().min(1).default(100_000),
  RELAY_ENTERPRISE_SMS_CEILING: z.coerce.number().int().min(1).default(10_000),
  RELAY_RECIPIENT_FREE: z.coerce.number().int().min(1).default(3),
  RELAY_RECIPIENT_BACKOFF_SECONDS: z.coerce.number().int().min(1).default(60),
  RELAY_RECIPIENT_BACKOFF_MAX_SECONDS: z.coerce.number().int().min(1).default(3_600),
  RELAY_RECIPIENT_GLOBAL_DAILY: z.coerce.number().int().min(1).default(200),
  RELAY_SITE_DAILY_CAP: z.coerce.number().int().min(1).default(1_000),
  RELAY_SMS_FREE_TEXT_ROLES: z
    .string()
    .regex(/^((professional|business|enterprise)(,(professional|business|enterprise))*)?$/, 'must be relay roles (professional, business, enterprise) separated by commas, or empty')
    .default(''),
  RELAY_RETRY_LIMIT: z.coerce.number().int().min(0).max(20).default(5),
  RELAY_RETRY_DELAY_SECONDS: z.coerce.number().int().min(1).default(30),
  RELAY_MAIL_CONCURRENCY: z.coerce.number().int().min(1).max(200).default(16),
  RELAY_SMS_CONCURRENCY: z.coerce.number().int().min(1).max(200).default(16),
  RELAY_POLL_SECONDS: z.coerce.number().min(0.5).max(300).default(2),
  RELAY_DELIVERY: boolean.default(true),
  RELAY_PAYLOAD_RETENTION_HOURS: z.coerce.number().min(0).max(24 * 365).default(24),
  // At least 40 days: a month's allowance and the 24-hour recipient throttles count messages.
  RELAY_MESSAGE_RETENTION_DAYS: z.coerce.number().int().min(40, 'must be at least 40 (a month of messages counts against the allowance)').max(3650).default(90),
  RELAY_MAIL_FOOTER: z.string().max(500).optional(),
};

type RelayEnv = z.infer<z.ZodObject<typeof relayVariables>>;

/** What the relay's settings read of the others. */
interface Common {
  /** NODE_ENV: the outbox is refused in production unless asked for. */
  nodeEnv: string;
  /** DATA_DIR: where the outbox writes. */
  dataDir: string;
}

/** The relay's settings from its variables; each problem is pushed to `problems` as a line naming its variables. */
export function relaySettings(e: RelayEnv, common: Common, problems: string[]): RelayConfig {
  const dkim = [e.RELAY_DKIM_DOMAIN, e.RELAY_DKIM_SELECTOR, e.RELAY_DKIM_KEY_FILE];
  if (dkim.some(Boolean) && !dkim.every(Boolean)) {
    problems.push('  RELAY_DKIM_DOMAIN, RELAY_DKIM_SELECTOR, RELAY_DKIM_KEY_FILE: set all three to sign with DKIM');
  }
  return {
    mail: mailConfig(e, common, problems),
    sms: smsConfig(e, common, problems),
    smsCountries: e.RELAY_SMS_COUNTRIES.split(','),
    enterpriseCeiling: { mail: e.RELAY_ENTERPRISE_MAIL_CEILING, sms: e.RELAY_ENTERPRISE_SMS_CEILING },
    recipientFree: e.RELAY_RECIPIENT_FREE,
    recipientBackoffBaseSeconds: e.RELAY_RECIPIENT_BACKOFF_SECONDS,
    recipientBackoffMaxSeconds: e.RELAY_RECIPIENT_BACKOFF_MAX_SECONDS,
    recipientGlobalDaily: e.RELAY_RECIPIENT_GLOBAL_DAILY,
    siteDailyCap: e.RELAY_SITE_DAILY_CAP,
    smsFreeTextRoles: e.RELAY_SMS_FREE_TEXT_ROLES.split(',').filter(Boolean) as Role[],
    retryLimit: e.RELAY_RETRY_LIMIT,
    retryDelaySeconds: e.RELAY_RETRY_DELAY_SECONDS,
    delivery: {
      concurrency: { mail: e.RELAY_MAIL_CONCURRENCY, sms: e.RELAY_SMS_CONCURRENCY },
      pollSeconds: e.RELAY_POLL_SECONDS,
      enabled: e.RELAY_DELIVERY,
    },
    mailFooter: e.RELAY_MAIL_FOOTER?.trim() || undefined,
    payloadRetentionMs: e.RELAY_PAYLOAD_RETENTION_HOURS * 3_600_000,
    messageRetentionMs: e.RELAY_MESSAGE_RETENTION_DAYS * 86_400_000,
  };
}

interface DkimFiles {
  domainName: string;
  keySelector: string;
  /** PEM private key, read at start. */
  keyFile: string;
}

export interface RelayConfig {
  /** SMTP (without `transport`, as before there was a choice), or `.eml` files in `dir`. */
  mail?: { transport?: 'smtp'; smtpUrl: string; from: string; dkim?: DkimFiles } | { transport: 'outbox'; dir: string; from: string; dkim?: DkimFiles };
  /** The SMS provider and its settings, by `provider`. */
  sms?: SmsConfig;
  smsCountries: string[];
  enterpriseCeiling: { mail: number; sms: number };
  recipientFree: number;
  recipientBackoffBaseSeconds: number;
  recipientBackoffMaxSeconds: number;
  recipientGlobalDaily: number;
  siteDailyCap: number;
  /** Roles that may send free-text SMS; the others must use a template. */
  smsFreeTextRoles: Role[];
  retryLimit: number;
  retryDelaySeconds: number;
  /**
   * How deliveries run in this process: messages handed to a channel's transport at once, how
   * often an idle worker looks for work it was not woken for, and whether this process delivers
   * at all (`false`: it accepts and queues; other processes deliver).
   */
  delivery: { concurrency: { mail: number; sms: number }; pollSeconds: number; enabled: boolean };
  /** Appended to Professional relay mails (RELAY_MAIL_FOOTER); Business and Enterprise mails are white-label. */
  mailFooter?: string;
  /**
   * How long a message's content (its text, HTML, subject, headers) is kept once it reached a
   * final state (sent, delivered, undelivered, failed); then the purge deletes it and keeps the
   * rest (RELAY_PAYLOAD_RETENTION_HOURS, 24 by default).
   */
  payloadRetentionMs: number;
  /**
   * How long a message's metadata (recipient, status, times, provider id) is kept once it reached
   * a final state; then the purge deletes the message (RELAY_MESSAGE_RETENTION_DAYS, 90 by default).
   */
  messageRetentionMs: number;
}

/**
 * The outbox writes messages to files instead of sending them: in production that silently
 * drops every 2FA code, so it takes an explicit RELAY_OUTBOX_IN_PRODUCTION=true there.
 */
function guardOutbox(e: RelayEnv, common: Common, problems: string[], variable: string): void {
  if (common.nodeEnv === 'production' && !e.RELAY_OUTBOX_IN_PRODUCTION) {
    problems.push(
      `  ${variable}: outbox writes messages to files instead of sending them; refused with NODE_ENV=production unless RELAY_OUTBOX_IN_PRODUCTION=true`,
    );
  }
}

function mailConfig(e: RelayEnv, common: Common, problems: string[]): RelayConfig['mail'] {
  const transport = e.RELAY_MAIL_TRANSPORT ?? (e.RELAY_SMTP_URL ? 'smtp' : undefined);
  const dkim =
    e.RELAY_DKIM_DOMAIN && e.RELAY_DKIM_SELECTOR && e.RELAY_DKIM_KEY_FILE
      ? { domainName: e.RELAY_DKIM_DOMAIN, keySelector: e.RELAY_DKIM_SELECTOR, keyFile: e.RELAY_DKIM_KEY_FILE }
      : undefined;
  if (transport === 'outbox') {
    guardOutbox(e, common, problems, 'RELAY_MAIL_TRANSPORT');
    // No real recipient sees the From of a file, so development needs no address set.
    return { transport, dir: path.join(common.dataDir, 'outbox', 'mail'), from: e.RELAY_MAIL_FROM ?? 'Relay <relay@localhost>', dkim };
  }
  if (transport === 'smtp') {
    const { RELAY_SMTP_URL: smtpUrl, RELAY_MAIL_FROM: from } = e;
    requireAll(problems, e.RELAY_MAIL_TRANSPORT ? 'RELAY_MAIL_TRANSPORT is smtp' : 'RELAY_SMTP_URL is set', {
      RELAY_SMTP_URL: smtpUrl,
      RELAY_MAIL_FROM: from,
    });
    return smtpUrl && from ? { smtpUrl, from, dkim } : undefined;
  }
  return undefined;
}

/**
 * The SMS provider: RELAY_SMS_PROVIDER, or the generic webhook when only RELAY_SMS_URL is set
 * (the configuration from before there was a choice). Each provider's receipts are to come to
 * `${RELAY_RECEIPT_BASE_URL}/webhooks/sms/<provider>`.
 */
function smsConfig(e: RelayEnv, common: Common, problems: string[]): SmsConfig | undefined {
  const provider = e.RELAY_SMS_PROVIDER ?? (e.RELAY_SMS_URL ? 'webhook' : undefined);
  const when = e.RELAY_SMS_PROVIDER ? `RELAY_SMS_PROVIDER is ${provider}` : 'RELAY_SMS_URL is set';
  const timeoutMs = e.RELAY_SMS_TIMEOUT_SECONDS * 1000;
  const receiptUrl = e.RELAY_RECEIPT_BASE_URL && `${e.RELAY_RECEIPT_BASE_URL}/webhooks/sms/${provider}`;
  switch (provider) {
    case undefined:
      return undefined;
    case 'webhook': {
      const { RELAY_SMS_URL: url, RELAY_SMS_TOKEN: token } = e;
      requireAll(problems, when, { RELAY_SMS_URL: url, RELAY_SMS_TOKEN: token });
      return url && token ? { provider, url, token, sender: e.RELAY_SMS_SENDER, timeoutMs } : undefined;
    }
    case 'twilio': {
      const { TWILIO_ACCOUNT_SID: accountSid, TWILIO_AUTH_TOKEN: authToken, TWILIO_FROM: from } = e;
      const messagingServiceSid = e.TWILIO_MESSAGING_SERVICE_SID;
      requireAll(problems, when, { TWILIO_ACCOUNT_SID: accountSid, TWILIO_AUTH_TOKEN: authToken });
      if (!from && !messagingServiceSid) problems.push(`  TWILIO_FROM or TWILIO_MESSAGING_SERVICE_SID: one is required when ${when}`);
      return accountSid && authToken && (from || messagingServiceSid)
        ? { provider, accountSid, authToken, from, messagingServiceSid, apiBase: e.TWILIO_API_BASE, receiptUrl, timeoutMs }
        : undefined;
    }
    case 'vonage': {
      const { VONAGE_API_KEY: apiKey, VONAGE_API_SECRET: apiSecret, VONAGE_FROM: from } = e;
      requireAll(problems, when, { VONAGE_API_KEY: apiKey, VONAGE_API_SECRET: apiSecret, VONAGE_FROM: from });
      // Unsigned receipts could come from anyone: asking for receipts means verifying them.
      if (receiptUrl && !e.VONAGE_SIGNATURE_SECRET) {
        problems.push('  VONAGE_SIGNATURE_SECRET: required when RELAY_RECEIPT_BASE_URL is set (receipts are verified by their signature)');
      }
      const receiptSignature = e.VONAGE_SIGNATURE_SECRET ? { secret: e.VONAGE_SIGNATURE_SECRET, method: e.VONAGE_SIGNATURE_METHOD } : undefined;
      return apiKey && apiSecret && from
        ? { provider, apiKey, apiSecret, from, apiBase: e.VONAGE_API_BASE, receiptUrl, receiptSignature, timeoutMs }
        : undefined;
    }
    case 'plivo': {
      const { PLIVO_AUTH_ID: authId, PLIVO_AUTH_TOKEN: authToken, PLIVO_FROM: from, PLIVO_POWERPACK_UUID: powerpackUuid } = e;
      requireAll(problems, when, { PLIVO_AUTH_ID: authId, PLIVO_AUTH_TOKEN: authToken });
      if (Boolean(from) === Boolean(powerpackUuid)) {
        problems.push(`  PLIVO_FROM, PLIVO_POWERPACK_UUID: set exactly one when ${when}`);
      }
      return authId && authToken && Boolean(from) !== Boolean(powerpackUuid)
        ? { provider, authId, authToken, from, powerpackUuid, apiBase: e.PLIVO_API_BASE, receiptUrl, timeoutMs }
        : undefined;
    }
    case 'sns': {
      const { AWS_REGION: region } = e;
      requireAll(problems, when, { AWS_REGION: region });
      return region
        ? {
            provider,
            region,
            smsType: e.SNS_SMS_TYPE,
            senderId: e.SNS_SENDER_ID,
            originationNumber: e.SNS_ORIGINATION_NUMBER,
            endpoint: e.SNS_API_BASE,
            timeoutMs,
          }
        : undefined;
    }
    case 'outbox':
      guardOutbox(e, common, problems, 'RELAY_SMS_PROVIDER');
      return { provider, dir: path.join(common.dataDir, 'outbox', 'sms') };
  }
}

// The SMS providers' settings: what smsConfig() reads from RELAY_SMS_*, and what each provider of
// relay/delivery/sms/ is created with.

/** A provider of our own making, or a gateway in front of one: JSON in, bearer token. */
export interface WebhookConfig {
  provider?: 'webhook';
  /** The provider endpoint that takes `POST { to, text, sender?, reference? }`. */
  url: string;
  /** Sent as `Authorization: Bearer <token>`. */
  token: string;
  /** Sender id or number, when the provider lets the relay choose one. */
  sender?: string;
  /** Deadline for the whole request, 10 s by default. */
  timeoutMs?: number;
}

/**
 * Twilio Programmable Messaging, Messages resource:
 * https://www.twilio.com/docs/messaging/api/message-resource#create-a-message-resource
 *
 * Plain HTTPS rather than the `twilio` package: sending is one form POST with Basic auth, and
 * the SDK brings axios and a dozen more packages, its own HTTP agent and retry logic in the
 * way of ours, and no way to point it at a fake on loopback short of monkey-patching.
 */
export interface TwilioConfig {
  provider: 'twilio';
  /** `AC…`: the account, and the user of Basic auth. */
  accountSid: string;
  /** The password of Basic auth, and the key of the receipts' signatures. */
  authToken: string;
  /** A Twilio number in E.164, a short code or an alphanumeric sender id. */
  from?: string;
  /** `MG…`: a Messaging Service that picks the sender (either this or `from`, or both). */
  messagingServiceSid?: string;
  /** Another API origin (a region's `https://api.dublin.ie1.twilio.com`, or a test fake). */
  apiBase?: string;
  /** Where Twilio posts delivery receipts (`StatusCallback`). */
  receiptUrl?: string;
  timeoutMs?: number;
}

/**
 * Plivo Message API: https://www.plivo.com/docs/messaging/api/message/send-a-message
 *
 * Plain HTTPS rather than the `plivo` package: sending is one JSON POST with Basic auth, and
 * the SDK pulls in axios, lodash and more, with its own retries and agent.
 */
export interface PlivoConfig {
  provider: 'plivo';
  /** `MA…` or `SA…`: the account, and the user of Basic auth. */
  authId: string;
  /** The password of Basic auth, and the key of the receipts' signatures. */
  authToken: string;
  /** A Plivo number in E.164 or an alphanumeric sender id; or */
  from?: string;
  /** a Powerpack that picks the sender (Plivo refuses both at once). */
  powerpackUuid?: string;
  /** Another API origin than `https://api.plivo.com` (a test fake, a proxy). */
  apiBase?: string;
  /** Where Plivo posts delivery receipts (`url`). */
  receiptUrl?: string;
  timeoutMs?: number;
}

/**
 * Amazon SNS, Publish to a phone number:
 * https://docs.aws.amazon.com/sns/latest/dg/sms_publish-to-phone.html
 *
 * The official SDK (`@aws-sdk/client-sns`), unlike the other providers: a request needs a
 * SigV4 signature and credentials from the standard chain (environment, shared files, SSO,
 * web identity, ECS and EC2 roles, with refresh), which is a lot to get right by hand, and the
 * v3 client is small, modular and well kept. It keeps connections alive by default, takes an
 * `endpoint` (for tests and VPC endpoints) and does not follow redirects.
 */
export interface SnsConfig {
  provider: 'sns';
  /** The region whose SNS sends the SMS (not every region does). */
  region: string;
  /** Transactional (2FA codes: delivery first) or Promotional (cheapest). */
  smsType: 'Transactional' | 'Promotional';
  /** An alphanumeric sender id (3-11 characters), where the destination country allows one. */
  senderId?: string;
  /** A number or short code of the account to send from (E.164). */
  originationNumber?: string;
  /** Another endpoint than the region's (a VPC endpoint, a test fake). */
  endpoint?: string;
  /** Fixed credentials instead of the standard chain (the tests' fake needs no real ones). */
  credentials?: SNSClientConfig['credentials'];
  timeoutMs?: number;
}

/** SMS written as JSON files into a folder, for local development: nothing leaves the machine. */
export interface OutboxConfig {
  provider: 'outbox';
  /** `${DATA_DIR}/outbox/sms` */
  dir: string;
}

/**
 * Vonage (formerly Nexmo) SMS API: https://developer.vonage.com/en/api/sms
 *
 * Plain HTTPS rather than `@vonage/server-sdk`: sending is one form POST, and the SDK is a
 * family of packages around node-fetch with its own agent, which would take the keep-alive,
 * timeout and redirect policy out of our hands for no gain.
 */
export interface VonageConfig {
  provider: 'vonage';
  apiKey: string;
  apiSecret: string;
  /** A Vonage number or an alphanumeric sender id (up to 11 characters). */
  from: string;
  /** Another API origin than `https://rest.nexmo.com` (a test fake, a proxy). */
  apiBase?: string;
  /** Where Vonage posts delivery receipts (`callback`, overriding the dashboard's setting). */
  receiptUrl?: string;
  /** What {@link verifyVonageReceipt} checks receipts with; sending does not use it. */
  receiptSignature?: VonageSignature;
  timeoutMs?: number;
}

/** The signature settings of the account, from the dashboard, for signed delivery receipts. */
export interface VonageSignature {
  secret: string;
  method: VonageSignatureMethod;
}

/** The dashboard's choices: "MD5 hash" (the default), or an HMAC with MD5, SHA-1, SHA-256, SHA-512. */
export type VonageSignatureMethod = 'md5hash' | 'md5' | 'sha1' | 'sha256' | 'sha512';

/** The SMS provider's settings (RELAY_SMS_*), one shape per provider (relay/delivery/sms/*.ts). */
export type SmsConfig = WebhookConfig | TwilioConfig | VonageConfig | PlivoConfig | SnsConfig | OutboxConfig;
