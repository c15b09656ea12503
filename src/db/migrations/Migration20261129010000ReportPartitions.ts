import { Migration } from '@mikro-orm/migrations';

/**
 * Issue 27: `reports` becomes a table partitioned by month of `reported_at`, so that reports
 * past REPORT_RETENTION_DAYS go by dropping a month's partition instead of deleting rows, and
 * each month's indexes take the month's writes only.
 *
 * The table as it is becomes the first partition, `reports_before`, holding everything before
 * the first monthly partition (the month after this migration runs). It is attached, not
 * copied: its rows, indexes, foreign key and id sequence stay where they are. To attach
 * without reading it under a lock, PostgreSQL needs a validated CHECK constraint that proves
 * every row lies before the bound, and a unique index on (id, reported_at) for the partitioned
 * table's primary key. On a fresh or small database this migration makes both itself. On a
 * large one, make them first, without blocking writes (docs/scaling.md, "Moving to
 * partitioned reports"); the migration then finds them and the switch takes milliseconds:
 *
 *   create unique index concurrently reports_id_reported_at_idx on reports (id, reported_at);
 *   alter table reports add constraint reports_partition_bound check (reported_at < '2027-01-01') not valid;
 *   alter table reports validate constraint reports_partition_bound;
 *
 * (the bound: the first day of a month after the day of the upgrade, in UTC).
 */
export class Migration20261129010000ReportPartitions extends Migration {
  override async up(): Promise<void> {
    this.addSql(`do $$
declare
  bound timestamptz;
  next_id bigint;
  key_name text;
  m timestamptz;
begin
  set local timezone = 'UTC';
  select substring(pg_get_constraintdef(c.oid) from '''([^'']+)''')::timestamptz into bound
    from pg_constraint c
   where c.conrelid = 'reports'::regclass and c.conname = 'reports_partition_bound' and c.convalidated;
  if bound is null then
    bound := date_trunc('month', now()) + interval '1 month';
    execute format('alter table reports add constraint reports_partition_bound check (reported_at < %L)', bound);
  end if;
  if not exists (select 1 from pg_class where relname = 'reports_id_reported_at_idx') then
    create unique index reports_id_reported_at_idx on reports (id, reported_at);
  end if;

  lock table reports in access exclusive mode;
  alter table reports rename to reports_before;
  -- Its primary key on id alone goes: the partitioned table's key, (id, reported_at), takes the
  -- unique index made above as the partition's, and PostgreSQL 17 (the embedded database) refuses
  -- a partition that has a primary key of its own. Dropping a constraint reads no rows.
  select conname into key_name from pg_constraint where conrelid = 'reports_before'::regclass and contype = 'p';
  execute format('alter table reports_before drop constraint %I', key_name);
  -- Its foreign key's name goes to the partitioned table's (the partition's becomes its child).
  select conname into key_name from pg_constraint where conrelid = 'reports_before'::regclass and contype = 'f';
  execute format('alter table reports_before rename constraint %I to reports_before_account_id_fkey', key_name);
  alter index reports_ip_reported_at_idx rename to reports_before_ip_reported_at_idx;
  alter index reports_account_ip_reported_at_idx rename to reports_before_account_ip_reported_at_idx;
  alter index reports_account_reported_at_idx rename to reports_before_account_reported_at_idx;
  alter table reports_before add constraint reports_before_id_reported_at_key unique using index reports_id_reported_at_idx;

  -- The ids go on from the old sequence's last, in a sequence the partitioned table owns.
  select coalesce(max(id), 0) + 1 into next_id from reports_before;
  alter table reports_before alter column id drop identity;
  create sequence reports_id_seq;
  perform setval('reports_id_seq', next_id, false);

  create table reports (
    id bigint not null default nextval('reports_id_seq'),
    ip text not null,
    account_id integer not null references accounts (id) on delete cascade,
    reporter_role text not null,
    categories smallint[] not null,
    comment text not null default '',
    reported_at timestamptz not null,
    aggregation_count integer not null default 0,
    reporter_country text null,
    primary key (id, reported_at)
  ) partition by range (reported_at);
  alter sequence reports_id_seq owned by reports.id;
  create index reports_ip_reported_at_idx on only reports (ip, reported_at desc, id desc);
  create index reports_account_ip_reported_at_idx on only reports (account_id, ip, reported_at desc);
  create index reports_account_reported_at_idx on only reports (account_id, reported_at desc);
  execute format('alter table reports attach partition reports_before for values from (minvalue) to (%L)', bound);
  alter index reports_ip_reported_at_idx attach partition reports_before_ip_reported_at_idx;
  alter index reports_account_ip_reported_at_idx attach partition reports_before_account_ip_reported_at_idx;
  alter index reports_account_reported_at_idx attach partition reports_before_account_reported_at_idx;

  -- Three months ahead; the server's hourly job keeps creating them. A report of a time no
  -- partition covers (a clock far ahead) lands in the default partition until one does.
  m := bound;
  for i in 1..3 loop
    execute format('create table %I partition of reports for values from (%L) to (%L)',
                   'reports_' || to_char(m, 'YYYY_MM'), m, m + interval '1 month');
    m := m + interval '1 month';
  end loop;
  create table reports_default partition of reports default;
end $$`);
  }

  override async down(): Promise<void> {
    // Back to one table: the partitions' rows are copied into a plain table of the old shape.
    this.addSql(`do $$
declare
  next_id bigint;
  key_name text;
begin
  alter table reports rename to reports_partitioned;
  -- Free the names the plain table's key, sequence and indexes take.
  select conname into key_name from pg_constraint where conrelid = 'reports_partitioned'::regclass and contype = 'p';
  execute format('alter table reports_partitioned rename constraint %I to reports_partitioned_pkey', key_name);
  alter sequence reports_id_seq rename to reports_partitioned_id_seq;
  alter index reports_ip_reported_at_idx rename to reports_partitioned_ip_reported_at_idx;
  alter index reports_account_ip_reported_at_idx rename to reports_partitioned_account_ip_reported_at_idx;
  alter index reports_account_reported_at_idx rename to reports_partitioned_account_reported_at_idx;
  create table reports (
    id bigint generated by default as identity primary key,
    ip text not null,
    account_id integer not null references accounts (id) on delete cascade,
    reporter_role text not null,
    categories smallint[] not null,
    comment text not null default '',
    reported_at timestamptz not null,
    aggregation_count integer not null default 0,
    reporter_country text null
  );
  insert into reports select * from reports_partitioned;
  select coalesce(max(id), 0) + 1 into next_id from reports;
  perform setval(pg_get_serial_sequence('reports', 'id'), next_id, false);
  alter table reports alter column id set generated always;
  drop table reports_partitioned;
  drop sequence if exists reports_partitioned_id_seq;
  create index reports_ip_reported_at_idx on reports (ip, reported_at desc, id desc);
  create index reports_account_ip_reported_at_idx on reports (account_id, ip, reported_at desc);
  create index reports_account_reported_at_idx on reports (account_id, reported_at desc);
end $$`);
  }
}
