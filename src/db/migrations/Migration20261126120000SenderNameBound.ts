import { Migration } from '@mikro-orm/migrations';

/**
 * A white-label sender name prefixes the account's templated SMS as a site's host name does,
 * so it gets the host's bound: 40 characters (relay/message-rules.ts `smsPrefixMax`), not 64.
 * A longer name saved before is cut to 40 (trailing spaces dropped), as it would be shown.
 */
export class Migration20261126120000SenderNameBound extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table accounts drop constraint accounts_sender_name_check');
    this.addSql("update accounts set sender_name = nullif(rtrim(left(sender_name, 40)), '') where length(sender_name) > 40");
    this.addSql(
      "alter table accounts add constraint accounts_sender_name_check check (sender_name is null or (length(sender_name) between 1 and 40 and sender_name !~ '[[:cntrl:]]'))",
    );
  }

  override async down(): Promise<void> {
    this.addSql('alter table accounts drop constraint accounts_sender_name_check');
    this.addSql(
      "alter table accounts add constraint accounts_sender_name_check check (sender_name is null or (length(sender_name) between 1 and 64 and sender_name !~ '[[:cntrl:]]'))",
    );
  }
}
