import nodemailer, { type NodemailerError } from 'nodemailer';
import { DeliveryError } from './errors.js';

export interface MailConfig {
  /** e.g. `smtps://user:pass@smtp.example.com` or `smtp://relay.internal:25` */
  smtpUrl: string;
  /** The From address of every message: `address` or `Display Name <address>`. */
  from: string;
  dkim?: { domainName: string; keySelector: string; privateKey: string };
}

export interface OutgoingMail {
  to: string;
  subject: string;
  html?: string;
  text?: string;
  replyTo?: string;
  headers?: { name: string; value: string }[];
  messageId?: string;
}

export interface MailTransport {
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
    pool: true,
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
    async send(mail) {
      const headers = (mail.headers ?? []).map(checkHeader);
      try {
        const info = await transporter.sendMail({
          from: config.from,
          to: mail.to,
          subject: mail.subject,
          text: mail.text,
          html: mail.html,
          replyTo: mail.replyTo,
          messageId: mail.messageId,
          headers,
        });
        return { messageId: info.messageId, response: info.response };
      } catch (err) {
        const { message, code, permanent } = err as NodemailerError;
        // `permanent` is set whenever the server replied (5xx but 503); otherwise judge by the code.
        const retryable = permanent === undefined ? !PERMANENT_CODES.has(code ?? '') : !permanent;
        throw new DeliveryError(`SMTP delivery failed: ${message}`, retryable, { cause: err });
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
