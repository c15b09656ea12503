import type { EntityManager } from '@mikro-orm/postgresql';
import { SmsTemplateEntity } from '../../db/entities/relay.js';
import type { TemplateRow, TemplateStore } from './templates.js';

/** The SMS templates' table (sms_templates), over its entity. */
export class SmsTemplateRepository implements TemplateStore {
  constructor(private readonly em: EntityManager) {}

  list(): Promise<TemplateRow[]> {
    return this.em.fork().find(SmsTemplateEntity, {}, { orderBy: { code: 'asc', lang: 'asc' } });
  }

  async set(code: string, lang: string, body: string): Promise<void> {
    await this.em.fork().createQueryBuilder(SmsTemplateEntity).insert({ code, lang, body }).onConflict(['code', 'lang']).merge(['body']).execute('run');
  }

  async remove(code: string, lang: string): Promise<boolean> {
    return (await this.em.fork().nativeDelete(SmsTemplateEntity, { code, lang })) > 0;
  }
}
