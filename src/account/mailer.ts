import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { RelayConfig } from '../config.js';
import { createMailOutbox, createMailTransport, type MailTransport } from '../relay/delivery/mail.js';

/**
 * The account mails go through the transport the relay is configured with (SMTP or the
 * development outbox), from ACCOUNT_MAIL_FROM or the relay's From, DKIM-signed alike. They are
 * few, so each gets a connection of its own: none stays open for the process to close.
 */
export function accountTransport(mail: RelayConfig['mail'], from: string | undefined): MailTransport | undefined {
  if (!mail) return undefined;
  const dkim = mail.dkim && { domainName: mail.dkim.domainName, keySelector: mail.dkim.keySelector, privateKey: readFileSync(mail.dkim.keyFile, 'utf8') };
  return mail.transport === 'outbox'
    ? createMailOutbox({ dir: mail.dir, from: from ?? mail.from, dkim })
    : createMailTransport({ smtpUrl: mail.smtpUrl, from: from ?? mail.from, dkim, pooled: false });
}

export interface AccountMail {
  to: string;
  subject: string;
  text: string;
}

/**
 * The account mails (verification, reset, "you already have an account"), through the same
 * SMTP transport (or outbox) the relay is configured with. A mail is sent in the background:
 * the answer to sign-up or reset must not take longer when a mail goes out than when none does
 * (that would tell whether an address is registered). A failure is logged, without the link.
 */
export class AccountMailer {
  private readonly pending = new Set<Promise<unknown>>();

  constructor(
    private readonly transport: MailTransport | undefined,
    private readonly logger: Logger,
  ) {}

  get configured(): boolean {
    return this.transport !== undefined;
  }

  send(mail: AccountMail): void {
    if (!this.transport) {
      this.logger.warn({ subject: mail.subject }, 'account mail not sent: no mail transport is configured');
      return;
    }
    const sending = this.transport
      .send({ to: mail.to, subject: mail.subject, text: mail.text })
      .then(() => this.logger.info({ subject: mail.subject }, 'account mail sent'))
      .catch((err: unknown) => this.logger.error({ subject: mail.subject, err: (err as Error).message }, 'account mail failed'))
      .finally(() => this.pending.delete(sending));
    this.pending.add(sending);
  }

  /**
   * Prepares a mail in the background, then sends it: for work (writing a link's token) that
   * happens only when a mail goes out, so that it cannot lengthen the answer either.
   */
  sendAfter(prepare: () => Promise<AccountMail | undefined>): void {
    const preparing = prepare()
      .then((mail) => mail && this.send(mail))
      .catch((err: unknown) => this.logger.error({ err: (err as Error).message }, 'account mail could not be prepared'))
      .finally(() => this.pending.delete(preparing));
    this.pending.add(preparing);
  }

  /** Waits for mails under way (shutdown, tests). */
  async settle(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  close(): void {
    this.transport?.close();
  }
}
