import { Migration } from '@mikro-orm/migrations';

/** The 30 threat categories of DESIGN.md: id, name, description, severity (1-10, feeds the score). */
const CATEGORIES: ReadonlyArray<[number, string, string, number]> = [
  [1, 'DNS Compromise', 'Altering DNS records resulting in improper redirection.', 7],
  [2, 'DNS Poisoning', 'Falsifying domain server cache (cache poisoning).', 7],
  [3, 'Fraud Orders', 'Fraudulent orders placed with stolen payment details.', 6],
  [4, 'DDoS Attack', 'Participating in distributed denial-of-service attacks.', 8],
  [5, 'FTP Brute-Force', 'Repeated FTP login attempts with guessed credentials.', 6],
  [6, 'Ping of Death', 'Oversized or malformed IP packets sent to crash hosts.', 5],
  [7, 'Phishing', 'Phishing web sites or e-mail sent to steal credentials.', 7],
  [8, 'Fraud VoIP', 'Fraudulent use of voice-over-IP services.', 5],
  [9, 'Open Proxy', 'Open proxy, open relay or Tor exit node.', 3],
  [10, 'Web Spam', 'Comment or forum spam, HTTP referer spam and other web spam.', 3],
  [11, 'Email Spam', 'Spam e-mail content, infected attachments and phishing e-mail.', 4],
  [12, 'Blog Spam', 'CMS blog comment spam.', 3],
  [13, 'VPN IP', 'Conjunctive category: the address belongs to a VPN service.', 1],
  [14, 'Port Scan', 'Scanning for open ports and vulnerable services.', 4],
  [15, 'Hacking', 'Attempts to break into systems by any other means.', 8],
  [16, 'SQL Injection', 'Attempts at SQL injection.', 8],
  [17, 'Spoofing', 'E-mail sender or other identity spoofing.', 5],
  [18, 'Brute-Force', 'Credential brute-force attacks on web page logins and services.', 6],
  [19, 'Bad Web Bot', 'Web bots ignoring robots.txt, scraping or probing aggressively.', 3],
  [20, 'Exploited Host', 'A host that is likely infected with malware and used for attacks.', 7],
  [21, 'Web App Attack', 'Attempts to probe for or exploit web applications.', 7],
  [22, 'SSH', 'Secure Shell abuse, usually combined with other categories.', 6],
  [23, 'IoT Targeted', 'Abuse aimed at Internet of Things devices.', 6],
  [24, 'Cryptomining', 'Unauthorised cryptocurrency mining or mining-pool abuse.', 6],
  [25, 'Data Harvesting', 'Scraping personal or proprietary data at scale.', 4],
  [26, 'Malware Hosting', 'Serving malware downloads or exploit kits.', 9],
  [27, 'Command and Control', 'Command-and-control server of a botnet or malware family.', 10],
  [28, 'Backdoor', 'Backdoor access to compromised systems offered or used.', 9],
  [29, 'Ransomware', 'Ransomware distribution, payment or control infrastructure.', 10],
  [30, 'Malware Upload', 'Attempts to upload malware to servers or services.', 8],
];

/** Accounts, API keys and the threat-category catalogue. */
export class Migration20261121000000Init extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table accounts (
        id integer generated always as identity primary key,
        email text null,
        role text not null check (role in ('free','contributor','professional','business','enterprise','honeypot')),
        licences integer not null default 1 check (licences between 1 and 20),
        created_at timestamptz not null default now()
      )`);
    this.addSql(`
      create table api_keys (
        id uuid primary key,
        account_id integer not null references accounts (id) on delete cascade,
        prefix text not null,
        hash bytea not null unique,
        created_at timestamptz not null default now(),
        revoked_at timestamptz null
      )`);
    this.addSql('create index api_keys_account_id_idx on api_keys (account_id)');
    this.addSql(`
      create table threat_categories (
        id integer primary key,
        name text not null unique,
        description text not null,
        severity_level integer not null check (severity_level between 1 and 10)
      )`);
    const values = CATEGORIES.map(
      ([id, name, description, severity]) =>
        `(${id}, ${quote(name)}, ${quote(description)}, ${severity})`,
    ).join(',\n');
    this.addSql(`insert into threat_categories (id, name, description, severity_level) values ${values}`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table threat_categories');
    this.addSql('drop table api_keys');
    this.addSql('drop table accounts');
  }
}

function quote(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}
