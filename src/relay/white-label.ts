import type { Role } from '../roles.js';
import { hasFeature } from '../roles.js';
import type { MailPayload } from './worker.js';

/**
 * What the role table promises: Business and Enterprise relay white-label. Their mails carry
 * the account's own sender name (set on the dashboard; else the display name of the send's
 * `From`, as for every tier before) and nothing of the service; their templated SMS are
 * prefixed with that name instead of the site's host. Professional mails keep the `From`
 * display name the client sends and carry the operator's service footer (RELAY_MAIL_FOOTER),
 * when one is configured. The address a mail comes from is always the relay's own.
 */
export function isWhiteLabel(role: Role): boolean {
  return hasFeature(role, 'white_label');
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export function brandMail(payload: MailPayload, role: Role, accountSenderName: string | null, footer: string | undefined): MailPayload {
  if (isWhiteLabel(role)) return { ...payload, senderName: accountSenderName ?? payload.senderName };
  if (!footer) return payload;
  return {
    ...payload,
    text: payload.text === '' ? payload.text : `${payload.text}\n\n-- \n${footer}\n`,
    html: payload.html === '' ? payload.html : `${payload.html}\n<hr>\n<p style="font-size:12px;color:#666">${escapeHtml(footer)}</p>`,
  };
}

/**
 * The name a templated SMS is prefixed with: the white-label sender name, else the site. Both
 * are bound alike by `checkSmsPrefix` (relay/message-rules.ts) when they come in: the sender
 * name when it is set (and by the database's check), the host at each send.
 */
export function smsPrefix(role: Role, accountSenderName: string | null, siteHost: string): string | undefined {
  if (isWhiteLabel(role) && accountSenderName) return accountSenderName;
  return siteHost || undefined;
}
