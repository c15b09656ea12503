import type { Logger } from 'pino';
import { abuseipdbModule } from './abuseipdb/module.js';
import { purgeSettingsOf } from './account/job.js';
import { accountModule } from './account/module.js';
import { blacklistModule } from './blacklist/module.js';
import { categoriesModule } from './categories/module.js';
import type { Clock } from './clock.js';
import type { Config } from './config.js';
import { crowdsecModule } from './crowdsec/module.js';
import type { Orm } from './db/orm.js';
import type { Pool } from './db/pool.js';
import { delistingModule } from './delisting/module.js';
import type { GeoIp } from './geo/geoip.js';
import type { Edge } from './http/edge.js';
import type { Handlers } from './http/types.js';
import type { Job } from './jobs/scheduler.js';
import { keysModule } from './keys/module.js';
import { notificationsModule } from './notifications/module.js';
import { paymentsModule } from './payments/module.js';
import { relayModule } from './relay/module.js';
import type { RelayRuntime } from './relay/runtime.js';
import type { DeliveryMetrics } from './relay/worker.js';
import { reputationModule } from './reputation/module.js';
import { rulesModule } from './rules/module.js';
import { statsModule } from './stats/module.js';
import { webhooksModule } from './webhooks/module.js';

/** What the areas' modules are built from: the process's database, clock, configuration and GeoIP. */
export interface Infrastructure {
  orm: Orm;
  pool: Pool;
  /** The reads that tolerate replication lag (DATABASE_REPLICA_URL, db/replicas.ts); `pool` when there are none. */
  replicas?: Pool;
  clock: Clock;
  logger: Logger;
  config: Config;
  /** The country and ASN lookups; opened by the caller (the server at start, the CLI when a command needs them). */
  geo: GeoIp;
  /** The relay's queue and receipts; undefined in the CLI (and no queue where no transport is configured: sends answer 503). */
  relay?: Pick<RelayRuntime, 'queue' | 'smsReceipts'>;
  /** The delivery receipts' counters (the server's metrics). */
  metrics?: DeliveryMetrics;
}

/**
 * The areas' modules, each built once by its own factory (`src/<area>/module.ts`) from the
 * infrastructure and the modules it uses, in the order they need each other. The server's
 * composition root (start.ts) builds them for the app and the jobs, the CLI for its commands;
 * nothing else constructs a service. Constructors do no I/O, so building them all for one
 * command costs nothing.
 *
 * Each module gives what the process needs of it: its services, `handlers(edge)` (its
 * operations'), `jobs` (run with the scheduler), and what it settles on stop.
 */
export function buildModules(infrastructure: Infrastructure) {
  const { orm, pool, clock, logger, config, geo } = infrastructure;
  // What every module may be built from; each is handed its own settings (its slice of the
  // configuration, src/<area>/settings.ts) besides.
  const base = { orm, pool, replicas: infrastructure.replicas ?? pool, clock, logger };
  // PUBLIC_URL, read when a link is made (the tests' servers learn theirs once listening).
  const publicUrl = () => config.web.publicUrl;
  const categories = categoriesModule(base);
  const keys = keysModule({ ...base, settings: config, publicLimits: config.publicLimits });
  const blacklist = blacklistModule({ ...base, settings: config, publicUrl: publicUrl(), categories: categories.service, meter: keys.meter });
  const relay = relayModule({
    ...base,
    settings: config.relay,
    payments: config.payments,
    sites: keys.sites,
    runtime: infrastructure.relay,
    metrics: infrastructure.metrics,
  });
  const account = accountModule({
    ...base,
    settings: config.web,
    mail: config.relay.mail,
    v6AggregatePrefix: config.publicLimits.v6AggregatePrefix,
    purge: purgeSettingsOf(config),
    meter: keys.meter,
    relay: relay.service,
  });
  const webhooks = webhooksModule({ ...base, settings: config.webhooks, mailer: account.mailer });
  // A delisting request under review shows the reports' evidence, and the reputation asks
  // delisting whether an address is delisted: the evidence is read, at request time, through
  // the reputation module built just below.
  const delisting = delistingModule({
    ...base,
    settings: config.delisting,
    publicUrl,
    mailer: account.mailer,
    evidence: (ip, limit) => reputation.evidence(ip, limit),
  });
  const reputation = reputationModule({
    ...base,
    batching: config.reportBatching,
    geo,
    categories: categories.service,
    meter: keys.meter,
    snapshots: blacklist.snapshots,
    delistings: delisting.service,
    listener: webhooks.service,
  });
  const areas = {
    categories,
    keys,
    blacklist,
    relay,
    account,
    webhooks,
    delisting,
    reputation,
    payments: paymentsModule({ ...base, settings: config.stripe, toleranceSeconds: config.payments.toleranceSeconds, publicUrl, ledger: relay.ledger }),
    stats: statsModule({ ...base, categories: categories.service, snapshots: blacklist.snapshots }),
    notifications: notificationsModule({ ...base, sites: keys.sites }),
    rules: rulesModule({ ...base, settings: config.rules }),
    crowdsec: crowdsecModule({ ...base, categories: categories.service, snapshots: blacklist.snapshots }),
    abuseipdb: abuseipdbModule({ ...base, reputation: reputation.service, blacklist: blacklist.service }),
  };
  const all: readonly { handlers?: (edge: Edge) => Handlers; jobs?: readonly Job[] }[] = Object.values(areas);
  return {
    ...areas,
    /** Every operation's handler, each area's given the edge's pieces; an operation two areas answer stops the start. */
    handlers(edge: Edge): Handlers {
      const merged: Record<string, unknown> = {};
      for (const area of all) {
        for (const [operationId, handler] of Object.entries(area.handlers?.(edge) ?? {})) {
          if (operationId in merged) throw new Error(`${operationId} has a handler in two areas`);
          merged[operationId] = handler;
        }
      }
      return merged as Handlers;
    },
    /** What runs beside the requests, started with the scheduler. */
    jobs: all.flatMap((area) => area.jobs ?? []),
    /**
     * At the graceful stop, after the last request: the reports gathered written, then the
     * webhook events they made stored; the mails under way sent.
     */
    settle: () => Promise.all([reputation.close().then(() => webhooks.settle()), account.mailer.settle()]).then(() => undefined),
  };
}

export type Modules = ReturnType<typeof buildModules>;
