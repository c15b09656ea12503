/**
 * The contract test: starts the real server (src/main.ts) on a fresh database, creates a key
 * for every role and a CrowdSec bouncer, and runs Dredd over each bundled document (the API's,
 * CrowdSec's, AbuseIPDB's) with test/contract/hooks.cjs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { connectDatabase } from '../../src/db/connect.js';
import { ROLES, type Role } from '../../src/roles.js';
import { accessRules } from '../../src/http/access.js';
import { hasFeature, leastRoleWith } from '../../src/roles.js';
import { KeyService } from '../../src/keys/service.js';
import { blacklistSnapshots } from '../../src/blacklist/repository.js';
import { systemClock } from '../../src/clock.js';
import { loadApiArtifacts, projectRoot } from '../../src/openapi.js';
import { generateSigningKey } from '../../src/rules/rulesets.js';
import { CategoryService } from '../../src/categories/service.js';
import { Bouncers } from '../../src/crowdsec/bouncers.js';
import { BouncerRepository } from '../../src/crowdsec/repository.js';
import { newToken } from '../../src/delisting/rules.js';
import { startListening } from '../../scripts/support/processes.js';
import { startSmsProvider, startSmtp } from '../support/relay-fakes.js';

const DEFAULT_URL = 'postgres://postgres@127.0.0.1:5432/test';

async function serverDatabase(): Promise<{ url: string; drop: () => Promise<void> } | undefined> {
  const adminUrl = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL ?? DEFAULT_URL;
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 2_000 });
  try {
    await admin.connect();
  } catch (err) {
    // CI proves the contract on a real server: there, one that does not answer is a failure,
    // never a silent fall back to the embedded database.
    if (process.env.TEST_REQUIRE_POSTGRES === '1') {
      throw new Error(`contract: TEST_REQUIRE_POSTGRES is set but no PostgreSQL server answers at ${new URL(adminUrl).host} (${(err as Error).message})`);
    }
    return undefined;
  }
  const name = `trs_dredd_${randomBytes(5).toString('hex')}`;
  await admin.query(`create database ${name}`);
  await admin.end();
  const u = new URL(adminUrl);
  u.pathname = '/' + name;
  return {
    url: u.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

async function waitForReady(origin: string, child: ChildProcess): Promise<void> {
  // Listening, but ready only once the database answers.
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    try {
      const res = await fetch(origin + '/readyz');
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error('server did not become ready in 60 s');
}

/**
 * Dredd passes a run that skips what it should check: a run fails when fewer transactions
 * pass, or more are skipped, than this suite is known to reach for each document (raise them
 * as it grows).
 */
const COVERAGE: Record<string, { minPassing: number; maxSkipped: number }> = {
  // Delisting: 12 more passing; its POST's `default` response is skipped (it has no 200 to run it as).
  // The reporter's evidence (GET /reports/{ip}/evidence): its 403 (every role reports) and its
  // fault-budget 429 skipped, as for the other operations.
  // GET /check-asn: 6 more passing (its 200, 400, 401, 403, 429 and default), none skipped; the feeds 19 more.
  // Webhooks: 19 more passing (their 201, lists, 400/401/403/404/413/415); skipped: the 204 and the
  // test's 200 (no subscription with the example id), the 422 (ten subscriptions to make), the
  // fault-budget 429s and the `default` responses of operations without a 200. The test's 413
  // and 415 (a body it cannot read) pass.
  openapi: { minPassing: 309, maxSkipped: 34 },
  crowdsec: { minPassing: 8, maxSkipped: 0 },
  abuseipdb: { minPassing: 44, maxSkipped: 4 },
  // No Stripe and no SMS provider taking receipts in the contract run: their 200s (and the receipts' 401/405) are skipped.
  internal: { minPassing: 21, maxSkipped: 18 },
};

function checkCoverage(name: string, output: string): number {
  const { minPassing, maxSkipped } = COVERAGE[name]!;
  const summary = /complete.*?(\d+) passing, (\d+) failing, (\d+) errors, (\d+) skipped/.exec(output.replace(/\x1b\[[0-9;]*m/g, ''));
  if (!summary) {
    console.error(`contract: no Dredd summary found for ${name}`);
    return 1;
  }
  const [passing, skipped] = [Number(summary[1]), Number(summary[4])];
  console.log(`contract: ${name}: ${passing} passing, ${skipped} skipped`);
  if (passing < minPassing || skipped > maxSkipped) {
    console.error(`contract: ${name}: ${passing} passing (at least ${minPassing} expected), ${skipped} skipped (at most ${maxSkipped})`);
    return 1;
  }
  return 0;
}

/** The payment webhook's secret in the contract run, and an account that may hold bundles (set in main). */
const PAYMENT_WEBHOOK_SECRET = 'dredd-payment-webhook-secret';
const webhook: { secret: string; accountId?: number } = { secret: PAYMENT_WEBHOOK_SECRET };

/** Runs Dredd over one generated document with the hooks; its exit code, or the coverage's. */
async function dredd(name: string, origin: string, keys: Record<string, string>): Promise<number> {
  const child = spawn(
    path.join(projectRoot, 'node_modules', '.bin', 'dredd'),
    [`generated/${name}.yaml`, origin, '--hookfiles', 'test/contract/hooks.cjs', '--loglevel', 'error'],
    {
      cwd: projectRoot,
      env: { ...process.env, TRS_KEYS: JSON.stringify(keys), TRS_ACCESS: JSON.stringify(accessForHooks()), TRS_DREDD_DOCUMENT: name, TRS_WEBHOOK: JSON.stringify(webhook) },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    process.stdout.write(chunk);
  });
  const code = await new Promise<number>((resolve) => child.on('exit', (c) => resolve(c ?? 1)));
  return code !== 0 ? code : checkCoverage(name, output);
}

async function main(): Promise<number> {
  const database = await serverDatabase();
  // The relay delivers to a real SMTP server and an HTTP SMS provider on loopback.
  const [smtp, sms] = await Promise.all([startSmtp(), startSmsProvider()]);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'trs-dredd-'));
  // A published, signed rule set for GET /rules/{key} (the example parameter is scan_paths).
  const rulesDir = path.join(dataDir, 'rules');
  mkdirSync(rulesDir);
  writeFileSync(path.join(rulesDir, 'signing.pem'), generateSigningKey().privateKeyPem, { mode: 0o600 });
  writeFileSync(path.join(rulesDir, 'scan_paths.json'), JSON.stringify({ version: 1, rules: ['/.env', '/.git/config'] }));
  const env = {
    ...process.env,
    LOG_LEVEL: 'warn',
    DATA_DIR: dataDir,
    DATABASE_URL: database?.url ?? '',
    RELAY_SMTP_URL: smtp.url,
    RELAY_MAIL_FROM: 'Relay <relay@example.net>',
    RELAY_SMS_URL: sms.url,
    RELAY_SMS_TOKEN: sms.token,
    // Dredd stages the per-address public limit through X-Forwarded-For from loopback.
    TRUST_PROXY: 'loopback',
    RULES_DIR: rulesDir,
    RULES_SIGNING_KEY_FILE: path.join(rulesDir, 'signing.pem'),
    // Dredd sends each documented example to the same recipients, once per media type.
    RELAY_RECIPIENT_FREE: '100',
    RELAY_RECIPIENT_GLOBAL_DAILY: '1000',
    // The inbound payment webhook's signed events (openapi/internal/).
    PAYMENT_WEBHOOK_SECRET,
  };
  if (!database) delete (env as Record<string, string>).DATABASE_URL;
  let server: ChildProcess | undefined;
  try {
    // On a port the system chooses, which the server tells over IPC: nothing else can answer for it.
    const started = await startListening(['--import', 'tsx', 'src/main.ts'], env, { stdout: 'inherit' });
    server = started.child;
    const origin = started.origin;
    console.log(`contract: server on port ${started.port}, ${database ? 'PostgreSQL server' : 'embedded PostgreSQL'}`);
    await waitForReady(origin, started.child);
    const db = await connectDatabase(
      { databaseUrl: database?.url, dataDir, dbPoolMax: 2 },
      pino({ level: 'silent' }),
      { migrate: 'skip' },
    );
    const keys: Record<string, string> = {};
    try {
      const service = new KeyService(db.orm.em);
      for (const role of ROLES) {
        keys[role] = (await service.create({ role, licences: role === 'business' ? 2 : undefined })).key;
      }
      // Callers in the states the error answers need, so that Dredd can check those answers too.
      const staged = async (name: string, role: (typeof ROLES)[number]) => {
        const created = await service.create({ role });
        keys[name] = created.key;
        return created;
      };
      const day = new Date().toISOString().slice(0, 10);
      const used = (accountId: number, counter: string, n: number) =>
        db.pool.query('insert into usage_counters (subject, counter, day, used) values ($1, $2, $3::date, $4)', [`a:${accountId}`, counter, day, n]);
      const freeExhausted = await staged('free_exhausted', 'free');
      await used(freeExhausted.accountId, 'check', 1_000);
      await used(freeExhausted.accountId, 'report', 50);
      const contributorExhausted = await staged('contributor_exhausted', 'contributor');
      await used(contributorExhausted.accountId, 'report', 200);
      await used(contributorExhausted.accountId, 'feedback', 200);
      await used((await staged('professional_exhausted', 'professional')).accountId, 'check', 25_000);
      await db.pool.query("insert into usage_counters (subject, counter, day, used) values ('ip:198.51.100.99', 'public', $1::date, 100)", [day]);
      const capped = await staged('professional_capped', 'professional');
      webhook.accountId = (await staged('professional_bundles', 'professional')).accountId;
      const periodStart = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1));
      await db.pool.query(
        "insert into relay_usage (account_id, channel, period_start, inclusive_used) values ($1, 'mail', $2, 500), ($1, 'sms', $2, 25)",
        [capped.accountId, periodStart],
      );
      const sitesFull = await staged('professional_sites_full', 'professional');
      const oneSite = await staged('free_one_site', 'free');
      for (const [key, sites] of [[sitesFull, 10], [oneSite, 1]] as const) {
        for (let i = 0; i < sites; i++) {
          await db.pool.query('insert into key_sites (key_id, day, site, first_seen) values ($1, $2::date, $3, now())', [key.keyId, day, `site${i}.example`]);
        }
      }
      // Data behind the lists and statistics: reports from several accounts, and a snapshot.
      // Each must be stored, or Dredd would check the lists on less data than it seems to.
      for (let i = 0; i < 12; i++) {
        const reporter = (await service.create({ role: 'honeypot' })).key;
        for (const ip of ['1.2.3.4', '5.6.7.8', '8.8.4.4', `9.9.9.${i + 1}`]) {
          const res = await fetch(`${origin}/api/v2/report`, {
            method: 'POST',
            headers: { 'X-Key': reporter, 'content-type': 'application/json' },
            body: JSON.stringify({ ip, categories: [18, 22], comment: 'contract test seed' }),
          });
          const text = await res.text();
          if (res.status !== 200) throw new Error(`contract: seeding a report about ${ip} answered ${res.status}: ${text.slice(0, 300)}`);
        }
      }
      await blacklistSnapshots(db.pool, systemClock).regenerate();
      // A CrowdSec bouncer, and a key no bouncer has.
      keys.bouncer = (await new Bouncers(new BouncerRepository(db.orm.em), new CategoryService(db.orm.em.fork(), systemClock), systemClock).add('dredd', { confidence: 0 })).key;
      keys.bouncer_unknown = `trsb_${'x'.repeat(43)}`;
      // A delisting request whose token the hooks know (it is only ever mailed): `id:token`.
      const delist = { id: randomUUID(), ...newToken() };
      await db.pool.query(
        "insert into delist_requests (id, ip, email, reason, proven, status, token_hash, requester_network, created_at) values ($1, '45.155.205.26/32', 'postmaster@example.com', 'Contract test.', false, 'unconfirmed', $2, '127.0.0.1/32', now())",
        [delist.id, delist.hash],
      );
      keys.delist_request = `${delist.id}:${delist.token}`;
    } finally {
      await db.close();
    }
    let failed = 0;
    for (const name of Object.keys(COVERAGE)) failed = (await dredd(name, origin, keys)) || failed;
    return failed;
  } finally {
    if (server && server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((r) => server!.once('exit', r));
      server.kill('SIGTERM');
      await exited;
    }
    await database?.drop();
    await Promise.all([smtp.close(), sms.close()]);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);

/**
 * For the hooks: each key operation's least role and a role without its feature, from the
 * operations' `x-access` and the role table, as the server reads them.
 */
function accessForHooks(): Record<string, { leastRole?: Role; roleWithout?: Role }> {
  const api = loadApiArtifacts();
  const rules = { ...accessRules(api.document), ...accessRules(api.protocols.abuseipdb.document) };
  return Object.fromEntries(
    Object.entries(rules)
      .filter(([, rule]) => rule?.feature !== undefined)
      .map(([id, rule]) => [id, { leastRole: leastRoleWith(rule!.feature!), roleWithout: ROLES.findLast((role) => !hasFeature(role, rule!.feature!)) }]),
  );
}
