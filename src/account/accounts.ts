import { timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { SignupMode, WebConfig } from './settings.js';
import { ROLES, type Role } from '../roles.js';
import type { Pool, Queryable } from '../db/pool.js';
import { DomainError } from '../errors.js';
import { checkLicences } from '../keys/service.js';
import { revokeAccountKeys } from '../keys/repository.js';
import { checkSmsPrefix, MESSAGE_LIMITS, MessageRuleError } from '../relay/message-rules.js';
import type { Actor } from '../audit/trail.js';
import type { AccountMail, AccountMailer } from './mailer.js';
import { DummyPassword, hashPassword, needsRehash, passwordProblem, UNBOUNDED_HASHING, verifyPassword, type HashGate } from './passwords.js';
import { looksLikeToken, newToken, tokenHash } from './secrets.js';
import { AccountRepository, type LinkPurpose } from './repository.js';
import type { Sessions } from './sessions.repository.js';
import type { AuthThrottle } from './throttle.repository.js';


export interface AccountSettings {
  signup: SignupMode;
  /** The origin links in mails point to (PUBLIC_URL), never a request's Host header. */
  publicUrl: () => string;
  verifyTtlMs: number;
  /** A sign-in to an unconfirmed account mails a new link at most this often. */
  verifyResendMs: number;
  resetTtlMs: number;
  scryptCost: number;
  /** The service's name in mails and pages. */
  serviceName: string;
}

/** The service's settings from the configuration (the server, the CLI and tests build it alike). */
export function accountSettings(web: WebConfig, overrides: Partial<AccountSettings> = {}): AccountSettings {
  return {
    signup: web.signup,
    publicUrl: () => web.publicUrl ?? '',
    verifyTtlMs: web.verifyTtlMs,
    verifyResendMs: web.verifyResendMs,
    resetTtlMs: web.resetTtlMs,
    scryptCost: web.scryptCost,
    serviceName: web.serviceName,
    ...overrides,
  };
}

export class AccountError extends Error {
  constructor(
    readonly code: 'signup_closed' | 'invalid_invite' | 'invalid_email' | 'weak_password' | 'invalid_sender_name' | 'unknown_account' | 'password_unproven',
    message: string,
  ) {
    super(message);
  }
}

export const EMAIL_MAX = 254;
/** `local@domain` with a dot in the domain and nothing that needs quoting (as the relay takes them). */
const EMAIL = /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$/;

/** An address as it is stored and compared: trimmed and lower-cased; undefined when it is not one. */
export function normaliseEmail(input: unknown): string | undefined {
  if (typeof input !== 'string') return undefined;
  const email = input.trim().toLowerCase();
  // The pattern has no room for CR, LF or any control character: nothing reaches a mail header.
  return email.length <= EMAIL_MAX && EMAIL.test(email) ? email : undefined;
}

/**
 * A sender name for white-label mail and SMS: it prefixes the account's templated SMS as a
 * site's host name does, so it is bound by the same rule (relay/message-rules.ts
 * `checkSmsPrefix`): one line, printable, at most `smsPrefixMax` (40) characters.
 */
export function checkSenderName(input: string): string | null {
  const name = input.trim();
  if (name === '') return null;
  try {
    return checkSmsPrefix('sender_name', name, 'A sender name');
  } catch (err) {
    if (!(err instanceof MessageRuleError)) throw err;
    throw new AccountError('invalid_sender_name', `A sender name is one line of at most ${MESSAGE_LIMITS.smsPrefixMax} printable characters.`);
  }
}

export type SignInResult = { status: 'ok'; accountId: number } | { status: 'wrong' } | { status: 'unverified' };

export type ResetResult = { status: 'done'; keysRevoked: number } | { status: 'invalid_link' } | { status: 'weak'; problem: string };

/** What the operator's `accounts verify` did. */
export interface OperatorVerification {
  accountId: number;
  email: string;
  /** The address was confirmed before: nothing changed. */
  already: boolean;
  /** With `resetPassword`: the link with which the owner chooses a password (path only without PUBLIC_URL), and until when. */
  reset?: { link: string; expiresAt: Date; sessionsEnded: number; keysRevoked: number };
}

interface LoginRow {
  id: number;
  email: string;
  password_hash: string | null;
  email_verified_at: Date | null;
}

/**
 * Accounts of people on the web: sign-up (open, by invite, or closed), verification and reset
 * links (one-time, expiring), sign-in. No answer tells whether an address is registered: sign-up
 * and reset always say "check your mail" (a registered address gets a mail saying so), and
 * sign-in checks a password for an unknown address too, so it takes as long.
 */
export class AccountService {
  private readonly dummy: DummyPassword;

  private readonly accounts: AccountRepository;

  /** Every password hash runs through it (the process's one bound on hashing). */
  private readonly gate: HashGate;

  /** The pages' throttle: a verification mail sent at sign-in counts against the address's mails, a reset reopens sign-in. */
  private readonly throttle: AuthThrottle | undefined;

  constructor(
    pool: Pool,
    private readonly clock: Clock,
    private readonly mailer: AccountMailer,
    private readonly sessions: Sessions,
    private readonly settings: AccountSettings,
    options: { gate?: HashGate; throttle?: AuthThrottle } = {},
  ) {
    this.accounts = new AccountRepository(pool);
    this.dummy = new DummyPassword(settings.scryptCost);
    this.gate = options.gate ?? UNBOUNDED_HASHING;
    this.throttle = options.throttle;
  }

  get signupMode(): SignupMode {
    return this.settings.signup;
  }

  /** Mail needs a transport and PUBLIC_URL: a link to a guessed origin would be worse than none. */
  get canMail(): boolean {
    return this.mailer.configured && this.settings.publicUrl() !== '';
  }

  private mail(mail: AccountMail): void {
    if (this.canMail) this.mailer.send(mail);
  }

  private link(path: string, token: string): string {
    return `${this.settings.publicUrl()}${path}?token=${token}`;
  }

  private async issueToken(accountId: number, purpose: LinkPurpose, db?: Queryable): Promise<string> {
    const token = newToken();
    const now = this.clock.now();
    const ttl = purpose === 'verify' ? this.settings.verifyTtlMs : this.settings.resetTtlMs;
    const write = (client: Queryable) => this.accounts.replaceLink(accountId, purpose, tokenHash(token), now, new Date(now.getTime() + ttl), client);
    await (db ? write(db) : this.accounts.inTransaction(write));
    return token;
  }

  /** The account a live link belongs to; `consume` uses it up (once, whoever asks at the same time). */
  private async redeem(token: unknown, purpose: LinkPurpose, consume: boolean, db?: Queryable): Promise<number | undefined> {
    if (!looksLikeToken(token)) return undefined;
    const hash = tokenHash(token);
    const row = await this.accounts.liveLink(hash, purpose, this.clock.now(), consume, db);
    return row && timingSafeEqual(row.token_hash, hash) ? row.account_id : undefined;
  }

  /**
   * Sign-up. Whether or not the address has an account, the answer is the same and a mail goes
   * out: a verification link for a new account, a note with the sign-in and reset pages for a
   * known one. A new account starts with the Free role and no key.
   */
  async register(input: { email: unknown; password: string; invite?: string; ip: string }): Promise<void> {
    if (this.settings.signup === 'closed') throw new AccountError('signup_closed', 'Sign-up is closed on this server; ask its operator for an account.');
    const email = normaliseEmail(input.email);
    if (!email) throw new AccountError('invalid_email', 'Enter one e-mail address, such as name@example.com.');
    const problem = passwordProblem(input.password, email);
    if (problem) throw new AccountError('weak_password', problem);
    if (this.settings.signup === 'invite' && !(await this.inviteLive(input.invite))) {
      throw new AccountError('invalid_invite', 'This invite code is not valid (it may be used or expired).');
    }
    // Hashed whether or not it is used, so both answers take as long.
    const passwordHash = await this.gate.run(() => hashPassword(input.password, this.settings.scryptCost));
    const outcome = await this.accounts.inTransaction(async (client) => {
      await this.accounts.lockSignup(email, client);
      if (await this.accounts.loginOf(email, client)) return { known: true as const };
      const accountId = await this.accounts.insertLogin(email, passwordHash, this.clock.now(), client);
      if (this.settings.signup === 'invite') await this.useInvite(client, input.invite!, accountId);
      return { known: false as const, token: await this.issueToken(accountId, 'verify', client) };
    });
    const site = this.settings.publicUrl();
    if (outcome.known) {
      this.mail({
        to: email,
        subject: `${this.settings.serviceName}: you already have an account`,
        text: `Someone, perhaps you, tried to sign up at ${site} with this address.\n\nYou already have an account. Sign in at ${site}/account/sign-in\nor choose a new password at ${site}/account/reset\n\nIf it was not you, you need do nothing.\n`,
      });
    } else {
      this.mail({
        to: email,
        subject: `${this.settings.serviceName}: confirm your e-mail address`,
        text: `To confirm this address and open your account at ${site}, follow this link:\n\n${this.link('/account/verify', outcome.token)}\n\nIt works once and expires in ${Math.round(this.settings.verifyTtlMs / 3_600_000)} hours.\nIf you did not sign up, ignore this mail; the account stays closed.\n`,
      });
    }
  }

  /** Whether a verification link is live (the page asks before using it up, see web/account-pages.ts). */
  async verificationLive(token: unknown): Promise<boolean> {
    return (await this.redeem(token, 'verify', false)) !== undefined;
  }

  async verifyEmail(token: unknown, ip: string): Promise<boolean> {
    return this.accounts.inTransaction(async (client) => {
      const accountId = await this.redeem(token, 'verify', true, client);
      if (accountId === undefined) return false;
      await this.accounts.markVerified(accountId, this.clock.now(), client);
      await this.accounts.audit({ accountId, kind: 'email_verified', actor: 'web', ip }, this.clock.now(), client);
      return true;
    });
  }

  async signIn(input: { email: unknown; password: string; ip: string }): Promise<SignInResult> {
    const email = normaliseEmail(input.email);
    const login = email ? await this.accounts.loginOf(email) : undefined;
    if (!login?.password_hash || input.password.length > 1024) {
      await this.gate.run(() => this.dummy.burn(input.password.slice(0, 1024)));
      return { status: 'wrong' };
    }
    const stored = login.password_hash;
    if (!(await this.gate.run(() => verifyPassword(input.password, stored)))) {
      await this.accounts.audit({ accountId: login.id, kind: 'sign_in_failed', actor: 'web', ip: input.ip }, this.clock.now());
      return { status: 'wrong' };
    }
    if (needsRehash(login.password_hash, this.settings.scryptCost)) {
      // Made before PASSWORD_SCRYPT_COST was raised: its check is quicker than the dummy's, which
      // would tell a known address from an unknown one. Made anew now that the password is known
      // (unless a reset changed it meanwhile). When hashing is busy, at a later sign-in.
      const fresh = await this.gate.run(() => hashPassword(input.password, this.settings.scryptCost)).catch((err: unknown) => {
        if (err instanceof DomainError && err.kind === 'unavailable') return undefined;
        throw err;
      });
      if (fresh) await this.accounts.rehash(login.id, stored, fresh);
    }
    if (!login.email_verified_at) {
      await this.resendVerification(login);
      return { status: 'unverified' };
    }
    await this.accounts.audit({ accountId: login.id, kind: 'sign_in', actor: 'web', ip: input.ip }, this.clock.now());
    return { status: 'ok', accountId: login.id };
  }

  /**
   * A new verification link, at a sign-in with the right password to an unconfirmed account:
   * at most one per `verifyResendMs` (a younger link, the sign-up's included, stands: the page
   * says "check your mail" either way), and each counted against the address's mails as a
   * sign-up is (AuthThrottle.takeMail, 3 an hour). Whoever registered someone else's address
   * cannot turn sign-in into a stream of mails to it, from however many sources.
   */
  private async resendVerification(login: LoginRow): Promise<void> {
    if (!this.canMail) return;
    const token = await this.accounts.inTransaction(async (client) => {
      // Sign-ins at the same moment: one decides, the others send nothing.
      if (!(await this.accounts.tryLockLinks(login.id, 'verify', client))) return undefined;
      const newest = await this.accounts.newestLinkAt(login.id, 'verify', client);
      if (newest && this.clock.now().getTime() - newest.getTime() < this.settings.verifyResendMs) return undefined;
      if (this.throttle && !(await this.throttle.takeMail(login.email, client))) return undefined;
      return this.issueToken(login.id, 'verify', client);
    });
    if (!token) return;
    this.mail({
      to: login.email,
      subject: `${this.settings.serviceName}: confirm your e-mail address`,
      text: `To confirm this address, follow this link:\n\n${this.link('/account/verify', token)}\n\nIt works once and expires in ${Math.round(this.settings.verifyTtlMs / 3_600_000)} hours.\n`,
    });
  }

  /**
   * Sends a reset link when the address has an account; answers the same either way. The link
   * is written in the background with its mail, so a known address costs the answer no more
   * than an unknown one (one read).
   */
  async requestReset(emailInput: unknown): Promise<void> {
    const email = normaliseEmail(emailInput);
    const login = email ? await this.accounts.loginOf(email) : undefined;
    if (!login || !this.canMail) return;
    this.mailer.sendAfter(async () => {
      const token = await this.issueToken(login.id, 'reset');
      return {
        to: login.email,
        subject: `${this.settings.serviceName}: choose a new password`,
        text: `To choose a new password for your account at ${this.settings.publicUrl()}, follow this link:\n\n${this.link('/account/reset/confirm', token)}\n\nIt works once and expires in ${Math.round(this.settings.resetTtlMs / 60_000)} minutes.\nIf you did not ask for it, ignore this mail; your password stays as it is.\n`,
      };
    });
  }

  async resetLive(token: unknown): Promise<boolean> {
    return (await this.redeem(token, 'reset', false)) !== undefined;
  }

  /**
   * Sets a new password from a reset link. The link proves the mailbox, so the address counts as
   * verified; every session of the account ends, and with `revokeKeys` (the form's box, ticked by
   * default) every API key too: a key someone else made while they held the password (one who
   * registered the address before its owner, one who guessed it) does not outlive the reset.
   * Sign-in is open again for the address, whatever failures were counted against it.
   */
  async resetPassword(token: unknown, password: string, ip: string, options: { revokeKeys?: boolean } = {}): Promise<ResetResult> {
    if (!looksLikeToken(token)) return { status: 'invalid_link' };
    // The cheap checks come first: a live link and an acceptable password, both without using
    // the link up. Only then the 32 MiB scrypt run, so a stranger with made-up links never
    // makes the server hash (the page's per-IP throttle bounds the rest).
    const owner = await this.redeem(token, 'reset', false);
    if (owner === undefined) return { status: 'invalid_link' };
    const email = (await this.accounts.emailOf(owner)) ?? '';
    const problem = passwordProblem(password, email);
    if (problem) return { status: 'weak', problem };
    const passwordHash = await this.gate.run(() => hashPassword(password, this.settings.scryptCost));
    const result = await this.accounts.inTransaction(async (client): Promise<ResetResult> => {
      // Used up here, once, whoever else sent the same link meanwhile.
      const accountId = await this.redeem(token, 'reset', true, client);
      if (accountId === undefined) return { status: 'invalid_link' };
      const now = this.clock.now();
      await this.accounts.resetPassword(accountId, passwordHash, now, client);
      await this.sessions.destroyAll(accountId, client);
      const keysRevoked = options.revokeKeys ? await revokeAccountKeys(client, accountId, now, { actor: 'web', ip, reason: 'password_reset' }) : 0;
      await this.accounts.audit({ accountId, kind: 'password_reset', actor: 'web', ip, detail: { keys_revoked: keysRevoked } }, now, client);
      return { status: 'done', keysRevoked };
    });
    if (result.status === 'done' && email) await this.throttle?.clearAddress('sign-in', email);
    return result;
  }

  // The operator's side (CLI).

  /**
   * Marks an account's address verified (for servers that cannot send mail). The operator
   * cannot tell who signed up with an address: an unconfirmed account's password was chosen by
   * whoever registered first, perhaps not the address's owner, so such an account is refused
   * unless `resetPassword`, which clears that password, ends its sessions, revokes its keys and
   * makes a reset link for the operator to hand to the owner. An account without a password (made
   * by the operator) is confirmed as it is.
   */
  async verifyByOperator(idOrEmail: string, options: { resetPassword?: boolean } = {}): Promise<OperatorVerification> {
    const email = normaliseEmail(idOrEmail);
    const row = await this.accounts.find(email ? { email } : { id: /^\d{1,9}$/.test(idOrEmail) ? Number(idOrEmail) : -1 });
    if (!row) throw new AccountError('unknown_account', `no account ${idOrEmail}`);
    const done = { accountId: row.id, email: row.email };
    if (!options.resetPassword) {
      if (row.email_verified_at) return { ...done, already: true };
      if (row.has_password) {
        throw new AccountError(
          'password_unproven',
          `account ${row.id} (${row.email}) has a password that was set before its address was confirmed: whoever signed up with it may not own the address. ` +
            'Run it again with --reset-password to clear that password, end its sessions and revoke its keys; you get a link to hand to the owner, with which they choose a new password.',
        );
      }
      await this.accounts.inTransaction(async (client) => {
        await this.accounts.markVerified(row.id, this.clock.now(), client);
        await this.accounts.audit({ accountId: row.id, kind: 'email_verified', actor: 'cli' }, this.clock.now(), client);
      });
      return { ...done, already: false };
    }
    const now = this.clock.now();
    const reset = await this.accounts.inTransaction(async (client) => {
      await this.accounts.clearPassword(row.id, client);
      await this.accounts.markVerified(row.id, now, client);
      const sessionsEnded = await this.sessions.destroyAll(row.id, client);
      const keysRevoked = await revokeAccountKeys(client, row.id, now, { actor: 'cli', reason: 'password_cleared' });
      if (!row.email_verified_at) await this.accounts.audit({ accountId: row.id, kind: 'email_verified', actor: 'cli' }, now, client);
      await this.accounts.audit({ accountId: row.id, kind: 'password_reset', actor: 'cli', detail: { cleared: true, keys_revoked: keysRevoked } }, now, client);
      const token = await this.issueToken(row.id, 'reset', client);
      return { link: this.link('/account/reset/confirm', token), expiresAt: new Date(now.getTime() + this.settings.resetTtlMs), sessionsEnded, keysRevoked };
    });
    await this.throttle?.clearAddress('sign-in', row.email);
    return { ...done, already: !!row.email_verified_at, reset };
  }

  /** Changes an account's role and licences, recorded in its audit trail. */
  async setRole(accountId: number, role: Role, licences: number | undefined, actor: Actor = 'cli'): Promise<{ role: Role; licences: number }> {
    if (!ROLES.includes(role)) throw new AccountError('unknown_account', `unknown role ${role}`);
    const count = checkLicences(role, licences);
    return this.accounts.inTransaction(async (client) => {
      const before = await this.accounts.roleForUpdate(accountId, client);
      if (!before) throw new AccountError('unknown_account', `no account ${accountId}`);
      await this.accounts.setRole(accountId, role, count, client);
      const now = this.clock.now();
      if (before.role !== role) await this.accounts.audit({ accountId, kind: 'role_changed', actor, detail: { from: before.role, to: role } }, now, client);
      if (before.licences !== count) {
        await this.accounts.audit({ accountId, kind: 'licences_changed', actor, detail: { from: before.licences, to: count } }, now, client);
      }
      return { role, licences: count };
    });
  }

  async setSenderName(accountId: number, input: string, ip: string): Promise<string | null> {
    const name = checkSenderName(input);
    await this.accounts.inTransaction(async (client) => {
      await this.accounts.setSenderName(accountId, name, client);
      await this.accounts.audit({ accountId, kind: 'sender_name_changed', actor: 'web', ip, detail: { to: name } }, this.clock.now(), client);
    });
    return name;
  }

  /** A new invite code, shown once; only its hash is kept. */
  async createInvite(note: string, days: number): Promise<{ code: string; expiresAt: Date }> {
    const code = newToken();
    const now = this.clock.now();
    const expiresAt = new Date(now.getTime() + days * 86_400_000);
    await this.accounts.insertInvite(tokenHash(code), note.slice(0, 200), now, expiresAt);
    return { code, expiresAt };
  }

  private async inviteLive(code: string | undefined): Promise<boolean> {
    if (!looksLikeToken(code)) return false;
    return this.accounts.inviteLive(tokenHash(code), this.clock.now());
  }

  private async useInvite(db: Queryable, code: string, accountId: number): Promise<void> {
    if (!(await this.accounts.useInvite(tokenHash(code), accountId, this.clock.now(), db))) throw new AccountError('invalid_invite', 'This invite code is not valid (it may be used or expired).');
  }
}
