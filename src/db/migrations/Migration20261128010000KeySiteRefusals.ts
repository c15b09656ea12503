import { Migration } from '@mikro-orm/migrations';

/**
 * A key refused for new sites (past its role's sites a day) is recorded once per UTC day, not
 * once per refused host: the first refused site's row (`refused`) counts the day's refusals
 * (`refusals`), so that a key sending a new `X-Rip-Site` with every request writes no more rows.
 * `/verify-key`'s `domains.used` still exceeds its limit exactly when a site was refused.
 * Site names are host names, at most 253 characters (the DNS bound), and rows are purged after
 * the 30 days the dashboard shows (the `day` index serves that purge).
 */
export class Migration20261128010000KeySiteRefusals extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table key_sites add column refusals integer not null default 0');
    this.addSql('delete from key_sites where length(site) > 253');
    this.addSql(`
      with refused as (
        select key_id, day, site,
               row_number() over (partition by key_id, day order by first_seen, site) as n,
               count(*) over (partition by key_id, day) as refusals
          from key_sites where refused
      )
      update key_sites k set refusals = r.refusals
        from refused r
       where k.key_id = r.key_id and k.day = r.day and k.site = r.site and r.n = 1`);
    this.addSql('delete from key_sites where refused and refusals = 0');
    this.addSql('alter table key_sites add constraint key_sites_site_check check (length(site) between 1 and 253)');
    this.addSql('alter table key_sites add constraint key_sites_refusals_check check (refusals >= 0)');
    this.addSql('create unique index key_sites_refused_idx on key_sites (key_id, day) where refused');
    this.addSql('create index key_sites_day_idx on key_sites (day)');
  }

  override async down(): Promise<void> {
    this.addSql('drop index key_sites_day_idx');
    this.addSql('drop index key_sites_refused_idx');
    this.addSql('alter table key_sites drop constraint key_sites_refusals_check');
    this.addSql('alter table key_sites drop constraint key_sites_site_check');
    this.addSql('alter table key_sites drop column refusals');
  }
}
