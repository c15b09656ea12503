import { Migration } from '@mikro-orm/migrations';

/**
 * Which versions a snapshot opened, found by an index (issue 27 item 3, and the webhooks' events
 * of issue 28 item 2).
 *
 * A webhook endpoint's `blacklist.changed` event says which addresses were listed, delisted or
 * rescored from the snapshot it last saw to the newest. Compared as two whole lists, that was a
 * full join of every listed address per endpoint per regeneration: work with the list, not with
 * the change. The addresses that changed between two snapshots are the versions closed in between
 * (`blacklist_closures`) and the versions opened in between: this index finds the latter. Every
 * new version carries the newest snapshot's id, so its entry goes to the index's rightmost page
 * (no random page writes), and a close (a HOT update of `until_snapshot`) does not touch it.
 */
export class Migration20261202000000BlacklistOpenings extends Migration {
  override async up(): Promise<void> {
    this.addSql('create index blacklist_entries_from_idx on blacklist_entries (from_snapshot)');
  }

  override async down(): Promise<void> {
    this.addSql('drop index blacklist_entries_from_idx');
  }
}
