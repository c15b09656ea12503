import { Migration } from '@mikro-orm/migrations';

/**
 * Daily usage counters, one row per subject (an account `a:<id>` or a public source `ip:<addr>`),
 * counter (`check`, `report`, `public`) and UTC day. Old days are kept for usage history; they
 * are small (one row per active subject per day).
 */
export class Migration20261121000100UsageCounters extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table usage_counters (
        subject text not null,
        counter text not null check (counter in ('check', 'report', 'public')),
        day date not null,
        used integer not null check (used >= 0),
        primary key (subject, counter, day)
      )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table usage_counters');
  }
}
