/**
 * The thematic blacklist categories of GET /blacklist-categories: ready-made groups of threat
 * categories for service-specific lists (pass `categories` as the `category` filter).
 */
export interface BlacklistCategory {
  id: number;
  name: string;
  slug: string;
  description: string;
  categories: number[];
}

export const BLACKLIST_CATEGORIES: readonly BlacklistCategory[] = [
  { id: 1, name: 'SSH', slug: 'ssh', description: 'Attacks on Secure Shell services.', categories: [22] },
  {
    id: 2,
    name: 'Web attacks',
    slug: 'web-attacks',
    description: 'Attacks on web sites and web applications: exploits, SQL injection, bad bots.',
    categories: [15, 16, 19, 21],
  },
  { id: 3, name: 'Mail spam', slug: 'mail-spam', description: 'Senders of spam e-mail.', categories: [11] },
  { id: 4, name: 'Scanners', slug: 'scanners', description: 'Port and vulnerability scanners.', categories: [14] },
  { id: 5, name: 'Brute force', slug: 'brute-force', description: 'Credential guessing on logins of any service.', categories: [5, 18] },
  {
    id: 6,
    name: 'Botnets',
    slug: 'botnets',
    description: 'Hosts of botnets: DDoS participants, exploited hosts, IoT bots, command and control.',
    categories: [4, 6, 20, 23, 27],
  },
  {
    id: 7,
    name: 'Malware',
    slug: 'malware',
    description: 'Malware hosting, uploads, backdoors, ransomware and cryptomining.',
    categories: [24, 26, 28, 29, 30],
  },
  {
    id: 8,
    name: 'Fraud and phishing',
    slug: 'fraud',
    description: 'Phishing, fraudulent orders, VoIP fraud, spoofing and data harvesting.',
    categories: [3, 7, 8, 17, 25],
  },
  { id: 9, name: 'Proxies and VPNs', slug: 'proxies', description: 'Open proxies, Tor exit nodes and VPN addresses.', categories: [9, 13] },
  { id: 10, name: 'Web spam', slug: 'web-spam', description: 'Comment, forum and blog spam.', categories: [10, 12] },
  { id: 11, name: 'DNS abuse', slug: 'dns', description: 'DNS compromise and cache poisoning.', categories: [1, 2] },
  {
    id: 12,
    name: 'WordPress and web applications',
    slug: 'wordpress',
    description: 'Attacks on WordPress and other web applications, as the ReportedIP clients report them (the web catalogue, 31-58).',
    categories: Array.from({ length: 28 }, (_, i) => 31 + i),
  },
];
