import type { Request, Response } from 'express';
import { AccountError, EMAIL_MAX, type SignInResult } from '../account/accounts.js';
import { PASSWORD_MAX } from '../account/passwords.js';
import type { AuthAction, ThrottleVerdict } from '../account/throttle.repository.js';
import { sourceIp } from '../http/metering.js';
import { endSession, field, localPath, pageContext, startSession, type WebDeps } from './context.js';

/** Longest password field taken at all; longer ones are refused before any hashing. */
const PASSWORD_FIELD_MAX = 1_024;
const TOKEN_MAX = 64;

/**
 * Sign-up, verification, sign-in, sign-out and password reset. None of the answers tells whether
 * an address has an account: sign-up and reset always answer "check your mail", and a failed
 * sign-in says the same whether the address is unknown or the password wrong.
 */
export function authPages(deps: WebDeps) {
  const ctx = (res: Response) => pageContext(deps, res);
  const message = (res: Response, title: string, text: string, status = 200, extra: Record<string, unknown> = {}) =>
    deps.pages.send(res, 'message', { ...ctx(res), title, text, ...extra }, status);

  /** The answer to an attempt the throttle refuses: 429 and Retry-After. */
  const tooMany = (res: Response, verdict: ThrottleVerdict) => {
    res.setHeader('Retry-After', String(verdict.retryAfter));
    message(res, 'Too many attempts', `Too many attempts from here or for this address. Try again in ${Math.ceil(verdict.retryAfter / 60)} minutes.`, 429);
  };

  /** The per-address and per-IP throttle; refused attempts get 429 and Retry-After (and undefined here). */
  async function admitted(req: Request, res: Response, action: AuthAction, email: string): Promise<ThrottleVerdict | undefined> {
    const verdict = await deps.throttle.take(action, email || undefined, sourceIp(req));
    if (verdict.allowed) return verdict;
    tooMany(res, verdict);
    return undefined;
  }
  const throttled = async (req: Request, res: Response, action: AuthAction, email: string) => !(await admitted(req, res, action, email));

  const mailNote = () =>
    deps.accounts.canMail
      ? undefined
      : 'This server cannot send mail yet, so no confirmation link will reach you: after signing up, ask its operator to confirm your account (npm run cli -- accounts verify <address> --reset-password). They give you a link with which you choose your password.';

  const registerForm = (res: Response, values: { email?: string; invite?: string; error?: string }, status = 200) =>
    deps.pages.send(res, 'register', { ...ctx(res), title: 'Sign up', mode: deps.accounts.signupMode, note: mailNote(), ...values }, status);

  return {
    registerPage(req: Request, res: Response) {
      if (deps.accounts.signupMode === 'closed') return message(res, 'Sign-up is closed', 'This server does not take new accounts; ask its operator for one.');
      const invite = typeof req.query.invite === 'string' ? req.query.invite.slice(0, TOKEN_MAX) : '';
      registerForm(res, { invite });
    },

    async register(req: Request, res: Response) {
      const email = field(req, 'email', EMAIL_MAX + 10);
      const password = field(req, 'password', PASSWORD_FIELD_MAX);
      const invite = field(req, 'invite', TOKEN_MAX);
      if (await throttled(req, res, 'sign-up', email)) return;
      try {
        await deps.accounts.register({ email, password, invite: invite || undefined, ip: sourceIp(req) });
      } catch (err) {
        if (!(err instanceof AccountError)) throw err;
        return registerForm(res, { email, invite, error: err.message }, err.code === 'signup_closed' ? 403 : 400);
      }
      message(
        res,
        'Check your mail',
        `We have sent a message to ${email.trim().toLowerCase()}. Follow the link in it to confirm the address; then sign in.`,
        200,
        { note: mailNote() },
      );
    },

    async verifyPage(req: Request, res: Response) {
      const token = typeof req.query.token === 'string' ? req.query.token : '';
      // Asked first, used up on the button: mail scanners that open links do not spend it.
      if (!(await deps.accounts.verificationLive(token))) {
        return message(res, 'This link does not work', 'The link is used or expired. Sign in to get a new one.', 400);
      }
      deps.pages.send(res, 'confirm', { ...ctx(res), title: 'Confirm your address', action: '/account/verify', token, button: 'Confirm my address' });
    },

    async verify(req: Request, res: Response) {
      const token = field(req, 'token', TOKEN_MAX);
      if (!(await deps.accounts.verifyEmail(token, sourceIp(req)))) {
        return message(res, 'This link does not work', 'The link is used or expired. Sign in to get a new one.', 400);
      }
      message(res, 'Address confirmed', 'Your address is confirmed. Sign in to open your dashboard.', 200, { link: { href: '/account/sign-in', text: 'Sign in' } });
    },

    signInPage(req: Request, res: Response) {
      if (res.locals.web!.account) return res.redirect(303, localPath(req.query.next));
      deps.pages.send(res, 'sign-in', { ...ctx(res), title: 'Sign in', next: localPath(req.query.next), signup: deps.accounts.signupMode });
    },

    async signIn(req: Request, res: Response) {
      const email = field(req, 'email', EMAIL_MAX + 10);
      const password = field(req, 'password', PASSWORD_FIELD_MAX);
      const next = localPath(field(req, 'next', 200));
      const admission = await admitted(req, res, 'sign-in', email);
      if (!admission) return;
      const ip = sourceIp(req);
      let result: SignInResult;
      try {
        result = await deps.accounts.signIn({ email, password, ip });
      } catch (err) {
        // Not checked (hashing busy: 503): no failure either.
        await deps.throttle.forgive(admission);
        throw err;
      }
      // The right password (confirmed address or not) is no failure: the address's counts take failures only.
      if (result.status !== 'wrong') await deps.throttle.forgive(admission);
      // Past the address's ceiling only the right password passes; anything else is the refusal it would have been.
      else if (admission.onProbation) return tooMany(res, admission);
      if (result.status === 'ok') {
        await startSession(deps, req, res, result.accountId, ip);
        return res.redirect(303, next);
      }
      const error =
        result.status === 'unverified'
          ? `Confirm your address first: check your mail for the link we have sent you. A new one goes out at most every ${Math.round(deps.config.verifyResendMs / 60_000)} minutes.`
          : 'The e-mail address or the password is wrong.';
      deps.pages.send(res, 'sign-in', { ...ctx(res), title: 'Sign in', next, email, error, signup: deps.accounts.signupMode }, result.status === 'unverified' ? 403 : 401);
    },

    async signOut(req: Request, res: Response) {
      const account = res.locals.web!.account;
      if (account) await deps.audit.record({ accountId: account.id, kind: 'sign_out', actor: 'web', ip: sourceIp(req) });
      await endSession(deps, req, res);
      res.redirect(303, '/');
    },

    resetPage(_req: Request, res: Response) {
      deps.pages.send(res, 'reset', { ...ctx(res), title: 'Forgot your password?', note: mailNote() });
    },

    async reset(req: Request, res: Response) {
      const email = field(req, 'email', EMAIL_MAX + 10);
      if (await throttled(req, res, 'reset', email)) return;
      await deps.accounts.requestReset(email);
      message(res, 'Check your mail', 'If an account has this address, we have sent it a link to choose a new password. The link works once and expires soon.');
    },

    async resetConfirmPage(req: Request, res: Response) {
      const token = typeof req.query.token === 'string' ? req.query.token : '';
      if (!(await deps.accounts.resetLive(token))) {
        return message(res, 'This link does not work', 'The link is used or expired. Ask for a new one.', 400, { link: { href: '/account/reset', text: 'Ask for a new link' } });
      }
      deps.pages.send(res, 'reset-confirm', { ...ctx(res), title: 'Choose a new password', token, revokeKeys: true });
    },

    async resetConfirm(req: Request, res: Response) {
      const token = field(req, 'token', TOKEN_MAX);
      const password = field(req, 'password', PASSWORD_FIELD_MAX);
      // A ticked box sends the field (the form ticks it); a form without it keeps the keys.
      const revokeKeys = field(req, 'revoke_keys', 10) !== '';
      if (await throttled(req, res, 'reset-confirm', '')) return;
      const again = (error: string) => deps.pages.send(res, 'reset-confirm', { ...ctx(res), title: 'Choose a new password', token, revokeKeys, error }, 400);
      if (password.length > PASSWORD_MAX) return again(`Use at most ${PASSWORD_MAX} characters.`);
      const result = await deps.accounts.resetPassword(token, password, sourceIp(req), { revokeKeys });
      if (result.status === 'invalid_link') {
        return message(res, 'This link does not work', 'The link is used or expired. Ask for a new one.', 400, { link: { href: '/account/reset', text: 'Ask for a new link' } });
      }
      if (result.status === 'weak') return again(result.problem);
      // Every session of the account has ended, this browser's included.
      await endSession(deps, req, res);
      const keys = result.keysRevoked === 0 ? '' : ` ${result.keysRevoked === 1 ? 'Its API key has' : `Its ${result.keysRevoked} API keys have`} been revoked; make new ones on your dashboard.`;
      message(res, 'Password changed', `Your new password is set, and every other session has been signed out.${keys}`, 200, { link: { href: '/account/sign-in', text: 'Sign in' } });
    },
  };
}
