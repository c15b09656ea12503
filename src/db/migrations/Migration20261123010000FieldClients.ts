import { Migration } from '@mikro-orm/migrations';

/**
 * What the ReportedIP clients in the field need (Hive, Hive-Light, honeypot-server):
 *
 * - the category catalogue becomes data: each category belongs to a catalogue (`core`, the
 *   30 of the specification; `web`, the clients' web-application categories 31-58, off until
 *   an operator turns them on; `custom`, the operator's own) and can be switched off;
 * - keys get a name, and the sites a key is used from are counted per UTC day (the `domains`
 *   of /verify-key and the limit behind it);
 * - SMS templates become data an operator can extend, seeded with the built-in texts;
 * - positive feedback (an address a site unblocked) is kept once per account and address and
 *   counted on the address's aggregate;
 * - a notification configuration is kept per key and site.
 */
const WEB_CATEGORIES: ReadonlyArray<[number, string, string, number]> = [
  [31, 'WP Login Brute Force', 'Password guessing against the WordPress login.', 8],
  [32, 'WP Admin Probe', 'Probing the WordPress admin area.', 6],
  [33, 'WP XML-RPC Abuse', 'Abuse of the WordPress XML-RPC interface (brute force, pingback amplification).', 7],
  [34, 'WP REST API Abuse', 'Abuse of the WordPress REST API.', 6],
  [35, 'WP Vulnerability Scan', 'Scanning a WordPress site for known vulnerabilities.', 7],
  [36, 'WP Theme Exploit', 'Attempts to exploit a vulnerable WordPress theme.', 8],
  [37, 'WP Core File Modification', 'Attempts to modify WordPress core files.', 9],
  [38, 'WP Config Exposure', 'Attempts to read the WordPress configuration file.', 9],
  [39, 'WP Database Exposure', 'Attempts to download a WordPress database export or backup.', 8],
  [40, 'WP Form Spam', 'Spam through WordPress forms.', 3],
  [41, 'WP Registration Spam', 'Spam sign-ups on a WordPress site.', 4],
  [42, 'WP Trackback Spam', 'Trackback and pingback spam.', 4],
  [43, 'WP File Upload Attack', 'Uploading malicious files through a WordPress site.', 9],
  [44, 'Cross-Site Scripting', 'Cross-site scripting (XSS) attempts.', 8],
  [45, 'Code Injection', 'Attempts to inject and run code.', 9],
  [46, 'WP Core Tampering', 'Tampering with WordPress core files.', 9],
  [47, 'Directory Traversal', 'Path traversal attempts to reach files outside the web root.', 8],
  [48, 'File Inclusion', 'Local or remote file inclusion attempts.', 9],
  [49, 'Scraping', 'Automated scraping of a web site.', 3],
  [50, 'Open Redirect', 'Exploiting an open redirect.', 6],
  [51, 'Resource Exhaustion', 'Requests meant to exhaust server resources.', 7],
  [52, 'Media Library Abuse', 'Abuse of the WordPress media library or its uploads.', 6],
  [53, 'Search Spam', 'Search and SEO spam injection.', 4],
  [54, 'WP Cron Abuse', 'Abuse of the WordPress cron endpoint.', 5],
  [55, 'User Enumeration', 'Discovering user names of a site.', 6],
  [56, 'Version Fingerprinting', 'Detecting software versions to find vulnerable ones.', 4],
  [57, 'WP Plugin Exploit', 'Attempts to exploit a vulnerable WordPress plugin.', 8],
  [58, 'Config File Exposure', 'Attempts to read configuration files (.env, backups, dumps).', 9],
];

/** The built-in SMS templates: `{code}` and `{expiry}` ("10 minutes", in the language) are filled in. */
export const BUILTIN_SMS_TEMPLATES: ReadonlyArray<[code: string, lang: string, body: string]> = [
  ['2fa_code', 'en', 'Your verification code is {code}. It expires in {expiry}.'],
  ['2fa_code', 'de', 'Ihr Bestätigungscode lautet {code}. Er ist {expiry} gültig.'],
  ['2fa_code', 'fr', 'Votre code de vérification est {code}. Il expire dans {expiry}.'],
  ['2fa_code', 'es', 'Usa {code} para verificar tu identidad. Caduca en {expiry}.'],
  ['2fa_login', 'en', 'Your login code is {code}. It expires in {expiry}.'],
  ['2fa_login', 'de', 'Ihr Anmeldecode lautet {code}. Er ist {expiry} gültig.'],
  ['2fa_login', 'fr', 'Votre code de connexion est {code}. Il expire dans {expiry}.'],
  ['2fa_login', 'es', 'Usa {code} para acceder a tu cuenta. Caduca en {expiry}.'],
  ['login_code', 'en', 'Your login code is {code}. It expires in {expiry}.'],
  ['login_code', 'de', 'Ihr Anmeldecode lautet {code}. Er ist {expiry} gültig.'],
  ['login_code', 'fr', 'Votre code de connexion est {code}. Il expire dans {expiry}.'],
  ['login_code', 'es', 'Usa {code} para acceder a tu cuenta. Caduca en {expiry}.'],
  ['password_reset_code', 'en', 'Your password reset code is {code}. It expires in {expiry}.'],
  ['password_reset_code', 'de', 'Ihr Code zum Zurücksetzen des Passworts lautet {code}. Er ist {expiry} gültig.'],
  ['password_reset_code', 'fr', 'Votre code pour réinitialiser votre mot de passe est {code}. Il expire dans {expiry}.'],
  ['password_reset_code', 'es', 'Usa {code} para restablecer tu contraseña. Caduca en {expiry}.'],
];

const quote = (text: string) => `'${text.replace(/'/g, "''")}'`;

export class Migration20261123010000FieldClients extends Migration {
  override async up(): Promise<void> {
    this.addSql("alter table threat_categories add column catalogue text not null default 'core' check (catalogue in ('core', 'web', 'custom'))");
    this.addSql('alter table threat_categories add column enabled boolean not null default true');
    this.addSql(
      `insert into threat_categories (id, name, description, severity_level, catalogue, enabled) values ${WEB_CATEGORIES.map(
        ([id, name, description, severity]) => `(${id}, ${quote(name)}, ${quote(description)}, ${severity}, 'web', false)`,
      ).join(',\n')}`,
    );

    this.addSql("alter table api_keys add column name text not null default ''");

    this.addSql(`
      create table key_sites (
        key_id uuid not null references api_keys (id) on delete cascade,
        day date not null,
        site text not null,
        first_seen timestamptz not null,
        primary key (key_id, day, site)
      )`);

    this.addSql(`
      create table sms_templates (
        code text not null check (code ~ '^[a-z0-9_]{1,40}$'),
        lang text not null check (lang ~ '^[a-z]{2}$'),
        body text not null check (length(body) <= 480 and body like '%{code}%'),
        builtin boolean not null default false,
        primary key (code, lang)
      )`);
    this.addSql(
      `insert into sms_templates (code, lang, body, builtin) values ${BUILTIN_SMS_TEMPLATES.map(
        ([code, lang, body]) => `(${quote(code)}, ${quote(lang)}, ${quote(body)}, true)`,
      ).join(',\n')}`,
    );

    this.addSql(`
      create table ip_feedback (
        id bigint generated always as identity primary key,
        ip text not null,
        account_id integer not null references accounts (id) on delete cascade,
        key_id uuid null,
        reason text not null default '',
        created_at timestamptz not null,
        updated_at timestamptz not null,
        unique (ip, account_id)
      )`);
    this.addSql('alter table ip_stats add column positive_feedback integer not null default 0');

    this.addSql(`
      create table notification_configs (
        key_id uuid not null references api_keys (id) on delete cascade,
        site text not null,
        site_url text not null,
        recipients text[] not null,
        from_name text not null,
        from_email text not null,
        updated_at timestamptz not null,
        primary key (key_id, site)
      )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table notification_configs');
    this.addSql('alter table ip_stats drop column positive_feedback');
    this.addSql('drop table ip_feedback');
    this.addSql('drop table sms_templates');
    this.addSql('drop table key_sites');
    this.addSql('alter table api_keys drop column name');
    this.addSql("delete from threat_categories where catalogue <> 'core'");
    this.addSql('alter table threat_categories drop column enabled');
    this.addSql('alter table threat_categories drop column catalogue');
  }
}
