import type { EntityManager } from '@mikro-orm/postgresql';
import { ThreatCategoryEntity } from '../db/entities.js';

export interface CategoryView {
  id: number;
  name: string;
  description: string;
  severity_level: number;
}

/**
 * The threat-category catalogue. It changes only by migration, so each process reads it once
 * and keeps it.
 */
export class CategoryService {
  private cached: Promise<CategoryView[]> | undefined;
  private severityMap: Promise<Map<number, number>> | undefined;

  constructor(private readonly em: EntityManager) {}

  list(): Promise<CategoryView[]> {
    this.cached ??= this.load().catch((err: unknown) => {
      this.cached = undefined;
      throw err;
    });
    return this.cached;
  }

  /** Category id -> severity level (1-10). */
  severities(): Promise<Map<number, number>> {
    this.severityMap ??= this.list().then((list) => new Map(list.map((c) => [c.id, c.severity_level])));
    return this.severityMap;
  }

  private async load(): Promise<CategoryView[]> {
    const rows = await this.em.fork().find(ThreatCategoryEntity, {}, { orderBy: { id: 'asc' } });
    return rows.map((c) => ({ id: c.id, name: c.name, description: c.description, severity_level: c.severityLevel }));
  }
}
