import { Migration } from '@mikro-orm/migrations';

/**
 * A one-time message a session carries from a form's answer to the page it redirects to (a new
 * key, shown once after POST-redirect-GET). It is sealed with a key derived from the session's
 * id, which only the browser holds, so the table never holds anything readable.
 */
export class Migration20261126110000SessionFlash extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table web_sessions add column flash bytea null');
  }

  override async down(): Promise<void> {
    this.addSql('alter table web_sessions drop column flash');
  }
}
