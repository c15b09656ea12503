import type { EntityManager } from '@mikro-orm/postgresql';
import type { Clock } from '../clock.js';
import type { Catalogue, ThreatCategory } from '../db/entities.js';
import { CategoryRepository } from './repository.js';

export interface CategoryView {
  id: number;
  name: string;
  description: string;
  severity_level: number;
}

export interface CatalogueEntry extends CategoryView {
  catalogue: Catalogue;
  enabled: boolean;
}

/** A change to the catalogue the operator asked for that cannot be made. */
export class CatalogueError extends Error {}

/** How long a process trusts what it read: a change reaches every process within this time. */
export const CATALOGUE_TTL_MS = 30_000;

/** Ids of operator categories start here, clear of the specification's and the clients' ids. */
export const CUSTOM_ID_MIN = 100;
export const CUSTOM_ID_MAX = 10_000;

const view = (c: ThreatCategory): CategoryView => ({ id: c.id, name: c.name, description: c.description, severity_level: c.severityLevel });

/**
 * The threat-category catalogue, as data: the 30 categories of the specification, the web
 * categories the ReportedIP clients send (31-58, off until the operator enables them), and the
 * operator's own. Each process reads the enabled ones and keeps them for CATALOGUE_TTL_MS.
 */
export class CategoryService {
  private cached: { until: number; list: Promise<CategoryView[]>; severities: Promise<Map<number, number>> } | undefined;

  private readonly categories: CategoryRepository;

  constructor(
    em: EntityManager,
    private readonly clock: Clock,
  ) {
    this.categories = new CategoryRepository(em);
  }

  private current() {
    const now = this.clock.now().getTime();
    if (!this.cached || this.cached.until <= now) {
      const list = this.load();
      const entry = { until: now + CATALOGUE_TTL_MS, list, severities: list.then((l) => new Map(l.map((c) => [c.id, c.severity_level]))) };
      list.catch(() => {
        if (this.cached === entry) this.cached = undefined;
      });
      this.cached = entry;
    }
    return this.cached;
  }

  /** The enabled categories, by id. */
  list(): Promise<CategoryView[]> {
    return this.current().list;
  }

  /** Enabled category id -> severity level (1-10). */
  severities(): Promise<Map<number, number>> {
    return this.current().severities;
  }

  private async load(): Promise<CategoryView[]> {
    return (await this.categories.list({ enabledOnly: true })).map(view);
  }

  /** Every category, enabled or not (the CLI). */
  async all(): Promise<CatalogueEntry[]> {
    return (await this.categories.list({ enabledOnly: false })).map((c) => ({ ...view(c), catalogue: c.catalogue, enabled: c.enabled }));
  }

  /** Turns a whole catalogue on or off (`web`: the ReportedIP clients' 31-58). Returns how many changed. */
  async setCatalogue(catalogue: Exclude<Catalogue, 'core'>, enabled: boolean): Promise<number> {
    const changed = await this.categories.setCatalogue(catalogue, enabled);
    this.cached = undefined;
    return changed;
  }

  /** Adds or changes one of the operator's categories. */
  async upsertCustom(input: { id: number; name: string; description: string; severity: number }): Promise<CatalogueEntry> {
    if (!Number.isInteger(input.id) || input.id < CUSTOM_ID_MIN || input.id > CUSTOM_ID_MAX) {
      throw new CatalogueError(`operator categories take ids from ${CUSTOM_ID_MIN} to ${CUSTOM_ID_MAX}`);
    }
    if (!Number.isInteger(input.severity) || input.severity < 1 || input.severity > 10) throw new CatalogueError('severity is 1 to 10');
    const name = input.name.trim();
    if (name === '' || name.length > 60 || /[\r\n]/.test(name)) throw new CatalogueError('a name is 1 to 60 characters on one line');
    const entity = await this.categories.upsertCustom({ id: input.id, name, description: input.description.trim(), severityLevel: input.severity });
    if (entity === 'not_custom') throw new CatalogueError(`category ${input.id} is not an operator category`);
    if (entity === 'name_taken') throw new CatalogueError(`another category is named ${name}`);
    this.cached = undefined;
    return { ...view(entity), catalogue: entity.catalogue, enabled: entity.enabled };
  }

  /** Switches one of the operator's categories off; reports that carry it keep it. */
  async disableCustom(id: number): Promise<boolean> {
    const changed = await this.categories.disableCustom(id);
    this.cached = undefined;
    return changed;
  }
}
