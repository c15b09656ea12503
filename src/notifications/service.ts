import type { components } from '../../generated/api.js';
import type { Clock } from '../clock.js';
import type { NotificationConfigRepository } from './repository.js';
import { DomainError, sentence, unprocessable } from '../errors.js';
import type { Caller } from '../keys/service.js';
import { SITE_URL_RULE, siteHost, siteRefused } from '../keys/sites.js';
import { type KeySites } from '../keys/sites.repository.js';
import { MessageRuleError, parseMailbox, singleLine } from '../relay/message-rules.js';

/** The request and the stored configuration, as the contract has them. */
export type NotificationConfigInput = components['schemas']['NotificationConfigRequest'];
export type NotificationConfig = components['schemas']['NotificationConfig'];

const RECIPIENTS_MAX = 20;

/** Sites a key may hold configurations for (the contract's description of the operation says it). */
export const NOTIFICATION_CONFIGS_MAX = 50;

function invalid(err: unknown): never {
  if (err instanceof MessageRuleError) {
    throw unprocessable(sentence(`Invalid request: ${err.message}`), [{ name: err.field, message: err.message }]);
  }
  throw err;
}

function siteOf(url: string): string {
  const site = siteHost(url);
  if (site === undefined) {
    throw unprocessable(sentence(`Invalid request: ${SITE_URL_RULE}`), [{ name: 'site_url', message: SITE_URL_RULE }]);
  }
  return site;
}

/**
 * Where notifications about a site should go, as the ReportedIP Hive plugin syncs it: kept per
 * key and site (host name), replaced on each save, read back by the operator or the client.
 * The site of a save counts among the key's sites of the day as `X-Rip-Site` does (a new one
 * past the role's limit is refused, 403 `domain_limit_exceeded`), and a key holds
 * configurations for at most NOTIFICATION_CONFIGS_MAX sites (403
 * `notification_config_limit_exceeded` for a further one; stored sites can still be updated).
 */
export class NotificationConfigs {
  constructor(
    private readonly configs: NotificationConfigRepository,
    private readonly sites: KeySites,
    private readonly clock: Clock,
  ) {}

  async save(caller: Caller, input: NotificationConfigInput): Promise<NotificationConfig> {
    const site = siteOf(input.site_url);
    let recipients: string[];
    let fromName: string;
    let fromEmail: string;
    try {
      singleLine('site_url', input.site_url, 2048);
      const list = input.recipients ?? [];
      if (list.length > RECIPIENTS_MAX) throw new MessageRuleError('recipients', `at most ${RECIPIENTS_MAX} recipients are taken`);
      recipients = [...new Set(list.map((r, i) => parseMailbox(`recipients[${i}]`, r, 320).address))];
      fromName = singleLine('from_name', (input.from_name ?? '').trim(), 100);
      fromEmail = input.from_email ? parseMailbox('from_email', input.from_email, 320).address : '';
    } catch (err) {
      invalid(err);
    }
    const use = await this.sites.use(caller, site);
    if (!use.allowed) throw siteRefused(caller, site, use);
    const now = this.clock.now();
    const config = { siteUrl: input.site_url, recipients, fromName, fromEmail, updatedAt: now };
    if (!(await this.configs.save(caller.keyId, site, config, NOTIFICATION_CONFIGS_MAX))) {
      throw new DomainError(
        'forbidden',
        `This key holds notification configurations for ${NOTIFICATION_CONFIGS_MAX} sites, the most a key may; ${site} was not stored. The sites stored can still be updated.`,
        { code: 'notification_config_limit_exceeded' },
      );
    }
    return { site_url: input.site_url, site, recipients, from_name: fromName, from_email: fromEmail, updatedAt: now.toISOString() };
  }

  /** The configuration of a site of the key, or undefined. */
  async get(caller: Caller, siteUrl: string): Promise<NotificationConfig | undefined> {
    const site = siteOf(siteUrl);
    const row = await this.configs.get(caller.keyId, site);
    if (!row) return undefined;
    return { site_url: row.siteUrl, site, recipients: row.recipients, from_name: row.fromName, from_email: row.fromEmail, updatedAt: row.updatedAt.toISOString() };
  }
}
