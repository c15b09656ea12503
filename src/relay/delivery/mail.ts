import addressparser from 'nodemailer/lib/addressparser';
import { constants } from 'node:fs';
import { access, mkdir } from 'node:fs/promises';
import nodemailer, { type NodemailerError, type SendMailOptions } from 'nodemailer';
import { DeliveryError } from './errors.js';
import { outboxFileName, writeOutboxFile } from './outbox.js';

export interface MailConfig {
  /** e.g. `smtps://user:pass@smtp.example.com` or `smtp://relay.internal:25` */
  smtpUrl: string;
  /** The From address of every message: `address` or `Display Name <address>`. */
  from: string;
  dkim?: { domainName: string; keySelector: string; privateKey: string };
  /** Keep connections open between messages (the relay's stream); `false`: one per message. */
  pooled?: boolean;
  /** Connections of the pool, at most: as many messages go out at once. */
  maxConnections?: number;
}

/** Mail written as `.eml` files into a folder, for local development: nothing is sent. */
export interface MailOutboxConfig {
  /** `${DATA_DIR}/outbox/mail` */
  dir: string;
  from: string;
  dkim?: MailConfig['dkim'];
}

export interface OutgoingMail {
  to: string;
  /** The recipient's display name. */
  toName?: string;
  /** The sender name to show instead of the configured one; the address stays the configured one. */
  senderName?: string;
  subject: string;
  html?: string;
  text?: string;
  replyTo?: string | { name: string; address: string };
  headers?: { name: string; value: string }[];
  messageId?: string;
}

export interface MailTransport {
  /** `smtp` or `outbox`, e.g. for a metrics label. */
  readonly name: string;
  /** Sends one message; fails with a {@link DeliveryError}. */
  send(mail: OutgoingMail): Promise<{ messageId: string; response: string }>;
  /** Connects and, where the URL has credentials, logs in, to check the configuration. */
  verify(): Promise<void>;
  /** Closes the pooled connections once their current deliveries are done. */
  close(): void;
}

/** RFC 5322 field name: printable US-ASCII except the colon. */
const HEADER_NAME = /^[!-9;-~]+$/;

/** Nodemailer errors without an SMTP reply that sending the same message again would repeat. */
const PERMANENT_CODES = new Set(['EENVELOPE', 'EMAXRECIPIENTS']);

export function createMailTransport(config: MailConfig): MailTransport {
  const transporter = nodemailer.createTransport({
    url: config.smtpUrl,
    pool: config.pooled ?? true,
    maxConnections: config.maxConnections ?? 5,
    // A pooled connection is replaced after this many messages (nodemailer's default is 100).
    maxMessages: 1_000,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 15_000,
    dnsTimeout: 10_000,
    dkim: config.dkim,
    // One relayed message goes to exactly one recipient: a `to` listing several is refused.
    maxRecipients: 1,
    // Message content is plain strings from API callers; never let it point at files or URLs.
    disableFileAccess: true,
    disableUrlAccess: true,
  });

  return {
    name: 'smtp',
    async send(mail) {
      const options = mailOptions(config.from, mail);
      try {
        const info = await transporter.sendMail(options);
        return { messageId: info.messageId, response: info.response };
      } catch (err) {
        throw deliveryError('SMTP delivery', err);
      }
    },

    async verify() {
      await transporter.verify();
    },

    close() {
      transporter.close();
    },
  };
}

/**
 * The same message the SMTP transport would send (nodemailer renders it, DKIM-signed when
 * configured), written to `dir` as one `.eml` file per message instead.
 */
export function createMailOutbox(config: MailOutboxConfig): MailTransport {
  const transporter = nodemailer.createTransport({
    streamTransport: true,
    buffer: true,
    newline: 'windows',
    dkim: config.dkim,
    disableFileAccess: true,
    disableUrlAccess: true,
  });

  return {
    name: 'outbox',
    async send(mail) {
      const options = mailOptions(config.from, mail);
      let info;
      try {
        info = await transporter.sendMail(options);
      } catch (err) {
        throw deliveryError('Mail outbox', err);
      }
      // As over SMTP (maxRecipients), one relayed message goes to exactly one recipient.
      if (info.envelope.to.length !== 1) {
        throw new DeliveryError(`Mail outbox: a relayed message has one recipient, not ${info.envelope.to.length}`, false);
      }
      const name = outboxFileName(new Date(), info.messageId.replace(/^<|>$/g, ''), 'eml');
      try {
        const file = await writeOutboxFile(config.dir, name, info.message as Buffer);
        return { messageId: info.messageId, response: `written to ${file}` };
      } catch (err) {
        throw new DeliveryError(`Mail outbox could not write ${name}: ${(err as Error).message}`, true, { cause: err });
      }
    },

    async verify() {
      await mkdir(config.dir, { recursive: true, mode: 0o700 });
      await access(config.dir, constants.W_OK);
    },

    close() {
      transporter.close();
    },
  };
}

function mailOptions(from: string, mail: OutgoingMail): SendMailOptions {
  return {
    // nodemailer encodes a name given apart from the address: no header can be injected by it.
    from: mail.senderName ? { name: mail.senderName, address: addressOf(from) } : from,
    to: mail.toName ? { name: mail.toName, address: mail.to } : mail.to,
    subject: mail.subject,
    text: mail.text,
    html: mail.html,
    replyTo: mail.replyTo,
    messageId: mail.messageId,
    headers: (mail.headers ?? []).map(checkHeader),
  };
}

/** The address of a configured From (`Name <address>` or `address`). */
function addressOf(from: string): string {
  const parsed = addressparser(from)[0];
  return parsed && 'address' in parsed && parsed.address ? parsed.address : from;
}

function deliveryError(what: string, err: unknown): DeliveryError {
  const { message, code, permanent } = err as NodemailerError;
  // `permanent` is set whenever the server replied (5xx but 503); otherwise judge by the code.
  const retryable = permanent === undefined ? !PERMANENT_CODES.has(code ?? '') : !permanent;
  return new DeliveryError(`${what} failed: ${message}`, retryable, { cause: err });
}

/**
 * Refuses a header that could inject further header lines. Nodemailer would fold a line
 * break into a space, but a value the caller did not mean to send is an error, not a fix-up.
 */
function checkHeader({ name, value }: { name: string; value: string }): { key: string; value: string } {
  if (!HEADER_NAME.test(name)) {
    throw new DeliveryError(`invalid mail header name ${JSON.stringify(name)}`, false);
  }
  if (/[\r\n]/.test(value)) {
    throw new DeliveryError(`mail header ${name} has a line break in its value`, false);
  }
  return { key: name, value };
}
