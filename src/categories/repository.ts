import type { EntityManager } from '@mikro-orm/postgresql';
import { ThreatCategoryEntity, type Catalogue, type ThreatCategory } from '../db/entities.js';

/** The threat-category catalogue over its entity (threat_categories), each call a unit of work of its own. */
export class CategoryRepository {
  constructor(private readonly em: EntityManager) {}

  /** The categories, by id: the enabled ones, or all. */
  list(options: { enabledOnly: boolean }): Promise<ThreatCategory[]> {
    return this.em.fork().find(ThreatCategoryEntity, options.enabledOnly ? { enabled: true } : {}, { orderBy: { id: 'asc' } });
  }

  /** Turns a whole catalogue on or off; how many changed. */
  setCatalogue(catalogue: Catalogue, enabled: boolean): Promise<number> {
    return this.em.fork().nativeUpdate(ThreatCategoryEntity, { catalogue, enabled: !enabled }, { enabled });
  }

  /**
   * Adds or changes an operator's category (enabled): `not_custom` when the id is another
   * catalogue's, `name_taken` when another category has the name.
   */
  async upsertCustom(input: Pick<ThreatCategory, 'id' | 'name' | 'description' | 'severityLevel'>): Promise<ThreatCategory | 'not_custom' | 'name_taken'> {
    const em = this.em.fork();
    const existing = await em.findOne(ThreatCategoryEntity, { id: input.id });
    if (existing && existing.catalogue !== 'custom') return 'not_custom';
    const entity = existing ?? em.create(ThreatCategoryEntity, { ...input, catalogue: 'custom', enabled: true });
    Object.assign(entity, { name: input.name, description: input.description, severityLevel: input.severityLevel, enabled: true });
    try {
      await em.flush();
    } catch (err) {
      if ((err as { code?: string }).code === '23505') return 'name_taken';
      throw err;
    }
    // The addresses reported with it take its new severity (their highest one, as
    // recomputeAggregates computes it), and the blacklist's triggers note them for rescoring.
    // After the category's own commit, so saving it again finishes what a failure here left;
    // only rows whose severity differs are written (and so rescored).
    if (existing) {
      await em.getConnection().execute(
        `update ip_stats s set max_severity = n.severity
           from (select s.ip, coalesce((select max(c.severity_level) from threat_categories c where c.id = any(s.categories)), 0) as severity
                   from ip_stats s where s.categories @> array[?]::smallint[]) n
          where s.ip = n.ip and s.max_severity <> n.severity`,
        [input.id],
      );
    }
    return entity;
  }

  /** Switches an enabled operator's category off; false when there is none. */
  async disableCustom(id: number): Promise<boolean> {
    return (await this.em.fork().nativeUpdate(ThreatCategoryEntity, { id, catalogue: 'custom', enabled: true }, { enabled: false })) > 0;
  }
}
