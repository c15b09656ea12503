import { Migration } from '@mikro-orm/migrations';

/**
 * A site a key was refused for (past its role's number of sites a day) is recorded too, as
 * `refused`, so that `/verify-key` can tell a key that merely reached its limit (`ok`) from one
 * that was used, or tried, on more sites than it may (`over_limit`).
 */
export class Migration20261126000000KeySiteAttempts extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table key_sites add column refused boolean not null default false');
  }

  override async down(): Promise<void> {
    this.addSql('delete from key_sites where refused');
    this.addSql('alter table key_sites drop column refused');
  }
}
