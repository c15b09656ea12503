import { Migration } from '@mikro-orm/migrations';

/**
 * Found by the security review: the relay's throttles were shared by all accounts, and the
 * public allowance counted only per /64. Relay messages now record the key and the normalised
 * site they were sent for (the site cap, the distinct-sites bound and the recipient throttle
 * are scoped per account), and counters may be charged several at once, all or none
 * (an IPv6 /64 and its wider prefix), through one function. `faults` counts the server errors a
 * caller has met today: past a budget, they no longer give the charge back.
 */
export class Migration20261123000000SecurityScopes extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table relay_messages add column key_id uuid null');
    this.addSql("alter table relay_messages add column site text not null default ''");
    this.addSql(`update relay_messages set site = lower(regexp_replace(substring(site_url from '^[a-z]+://([^/:?#]+)'), '^www\\.', ''))
                  where site_url <> '' and substring(site_url from '^[a-z]+://([^/:?#]+)') is not null`);
    this.addSql('create index relay_messages_account_day_idx on relay_messages (account_id, created_at) include (site, key_id)');
    this.addSql('drop index relay_messages_site_idx');

    this.addSql('alter table usage_counters drop constraint usage_counters_counter_check');
    this.addSql("alter table usage_counters add constraint usage_counters_counter_check check (counter in ('check', 'report', 'public', 'faults'))");

    // Charges `units` to every subject, each within its own limit, or to none: the exception
    // block is a subtransaction, so a refusal rolls back the charges made before it.
    this.addSql(`
      create function charge_counters(p_subjects text[], p_counter text, p_day date, p_units integer, p_limits integer[])
      returns integer[] language plpgsql as $$
      declare
        result integer[] := '{}';
        used_now integer;
      begin
        for i in 1 .. coalesce(array_length(p_subjects, 1), 0) loop
          used_now := null;
          insert into usage_counters as u (subject, counter, day, used)
          select p_subjects[i], p_counter, p_day, p_units where p_units <= p_limits[i]
          on conflict (subject, counter, day) do update set used = u.used + excluded.used
           where u.used + excluded.used <= p_limits[i]
          returning u.used into used_now;
          if used_now is null then
            raise exception using errcode = 'TRS01';
          end if;
          result := result || used_now;
        end loop;
        return result;
      exception when sqlstate 'TRS01' then
        return null;
      end
      $$`);
  }

  override async down(): Promise<void> {
    this.addSql('drop function charge_counters(text[], text, date, integer, integer[])');
    this.addSql("delete from usage_counters where counter = 'faults'");
    this.addSql('alter table usage_counters drop constraint usage_counters_counter_check');
    this.addSql("alter table usage_counters add constraint usage_counters_counter_check check (counter in ('check', 'report', 'public'))");
    this.addSql("create index relay_messages_site_idx on relay_messages (site_url, created_at) where site_url <> ''");
    this.addSql('drop index relay_messages_account_day_idx');
    this.addSql('alter table relay_messages drop column site');
    this.addSql('alter table relay_messages drop column key_id');
  }
}
