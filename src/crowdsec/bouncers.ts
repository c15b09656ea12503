import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { CategoryService } from '../categories/service.js';
import type { Clock } from '../clock.js';
import { DomainError } from '../errors.js';
import type { Bouncer, BouncerChoice, BouncerRepository } from './repository.js';

/**
 * Bouncer keys: `trsb_` and 32 random bytes in base64url, shown once; only their SHA-256 is
 * kept (their entropy makes a slow hash pointless, as for API keys).
 */
export const BOUNCER_KEY_PREFIX = 'trsb_';
const BOUNCER_KEY = /^trsb_[A-Za-z0-9_-]{43}$/;
const SHOWN_PREFIX_LENGTH = BOUNCER_KEY_PREFIX.length + 8;
/** Names as cscli takes them: letters, digits and `.`, `_`, `@`, `:`, `-`. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._@:-]{0,63}$/;

/** The list a bouncer blocks by default: the score the specification recommends for automated blocking. */
export const DEFAULT_BOUNCER_CONFIDENCE = 90;

const hashOf = (key: string) => createHash('sha256').update(key, 'utf8').digest();

export interface BouncerOptions {
  confidence?: number;
  /** Threat-category ids; null: all. */
  categories?: number[] | null;
  /** null: no limit. */
  limit?: number | null;
}

/** The operator's bouncers (`trs bouncers …`), and the authentication of their keys. */
export class Bouncers {
  constructor(
    private readonly repository: BouncerRepository,
    private readonly categories: CategoryService,
    private readonly clock: Clock,
  ) {}

  /** Adds a bouncer; its key is returned this once. */
  async add(name: string, options: BouncerOptions = {}): Promise<{ bouncer: Bouncer; key: string }> {
    if (!NAME.test(name)) {
      throw new DomainError('invalid_input', `'${name}' is not a bouncer name: 1-64 letters, digits, '.', '_', '@', ':' or '-', starting with a letter or digit.`, { code: 'invalid_name' });
    }
    const choice = await this.choice({ confidence: DEFAULT_BOUNCER_CONFIDENCE, categories: null, limit: null }, options);
    const key = BOUNCER_KEY_PREFIX + randomBytes(32).toString('base64url');
    const bouncer = await this.repository.add(name, hashOf(key), key.slice(0, SHOWN_PREFIX_LENGTH), choice, this.clock.now());
    if (!bouncer) throw new DomainError('unprocessable', `A bouncer named '${name}' exists already (delete it first to make a new key).`, { code: 'bouncer_exists' });
    return { bouncer, key };
  }

  list(): Promise<Bouncer[]> {
    return this.repository.list();
  }

  /** Changes what a bouncer blocks; its next pull sends the difference. */
  async set(name: string, options: BouncerOptions): Promise<Bouncer> {
    const current = await this.repository.byName(name);
    if (!current) throw new DomainError('unprocessable', `There is no bouncer named '${name}'.`, { code: 'no_such_bouncer' });
    return (await this.repository.update(name, await this.choice(current, options)))!;
  }

  async remove(name: string): Promise<boolean> {
    return this.repository.remove(name);
  }

  /** The bouncer of a key, or undefined for a malformed or unknown one. */
  async authenticate(key: string | undefined): Promise<Bouncer | undefined> {
    if (key === undefined || !BOUNCER_KEY.test(key)) return undefined;
    const hash = hashOf(key);
    const found = await this.repository.byKeyHash(hash);
    return found && timingSafeEqual(found.keyHash, hash) ? found.bouncer : undefined;
  }

  /**
   * Notes a request of a bouncer (when, from where, as what), at most once a minute unless its
   * address or user agent changed, for `trs bouncers list`.
   */
  async seen(bouncer: Bouncer, ip: string, userAgent: string | undefined): Promise<void> {
    const now = this.clock.now();
    const agent = userAgent?.slice(0, 200) ?? null;
    const recent = bouncer.lastSeenAt && now.getTime() - bouncer.lastSeenAt.getTime() < 60_000;
    if (recent && bouncer.lastIp === ip && bouncer.userAgent === agent) return;
    await this.repository.recordSeen(bouncer.id, now, ip, agent);
  }

  private async choice(base: BouncerChoice, options: BouncerOptions): Promise<BouncerChoice> {
    const confidence = options.confidence ?? base.confidence;
    if (!Number.isInteger(confidence) || confidence < 0 || confidence > 100) {
      throw new DomainError('invalid_input', 'The confidence is a score from 0 to 100.', { code: 'invalid_confidence' });
    }
    const limit = options.limit === undefined ? base.limit : options.limit;
    if (limit !== null && (!Number.isInteger(limit) || limit < 1)) throw new DomainError('invalid_input', 'The limit is a positive number of addresses.', { code: 'invalid_limit' });
    let categories = options.categories === undefined ? base.categories : options.categories;
    if (categories) {
      categories = [...new Set(categories)].sort((a, b) => a - b);
      const known = await this.categories.severities();
      const unknown = categories.filter((id) => !known.has(id));
      if (unknown.length || !categories.length) {
        throw new DomainError('unprocessable', `Unknown threat-category id${unknown.length === 1 ? '' : 's'} ${unknown.join(', ')} (see trs categories list).`, { code: 'unknown_category' });
      }
    }
    return { confidence, categories, limit };
  }
}
