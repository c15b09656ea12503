import cluster, { type Worker } from 'node:cluster';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { systemClock } from './clock.js';
import { LIBUV_DEFAULT_THREADS } from './account/settings.js';
import type { Config } from './config.js';
import { connectDatabase } from './db/connect.js';
import { announceListening } from './ipc.js';
import { createLogger } from './logging.js';
import { start, type Running } from './start.js';

/**
 * How soon after a stop signal the same signal is the same request, not a second one. One
 * Ctrl-C reaches the server more than once: the terminal signals its whole process group, and
 * a wrapper in that group (npm, which `npm start` and `npm run serve` run the server under)
 * passes it on to its child too; a process manager stopping a control group does the same.
 * Those copies come within milliseconds. A person who wants the exit at once presses again.
 */
export const SAME_SIGNAL_MS = 1_000;

interface FirstSignal {
  signal: NodeJS.Signals;
  /** When it came (ms since the epoch). */
  at: number;
}

/** Whether a stop signal repeats the one a stop under way began with, within SAME_SIGNAL_MS. */
function repeats(first: FirstSignal, signal: NodeJS.Signals): boolean {
  return signal === first.signal && systemClock.now().getTime() - first.at < SAME_SIGNAL_MS;
}

/** Runs the server: one process, or with WORKERS > 1 a supervisor of that many. */
export async function run(config: Config): Promise<void> {
  const logger = createLogger(config.logLevel);
  if (config.workers > 1 && cluster.isPrimary) await supervise(config, logger);
  else await serve(config, logger);
}

/** One server process (src/start.ts composes it); graceful stop on signals. */
async function serve(config: Config, logger: Logger): Promise<void> {
  let stopping: (FirstSignal & { bySupervisor: boolean; directSeen: boolean }) | undefined;
  let started: Promise<Running> | undefined;
  /**
   * SIGTERM (a service manager, a container's stop, a rolling restart) drains first: /readyz
   * answers 503 and responses close their connections for SHUTDOWN_DRAIN_SECONDS, so that a load
   * balancer moves traffic away before the listener closes. SIGINT (Ctrl-C) skips the drain.
   * Then in-flight requests and deliveries finish; a second signal, or SHUTDOWN_TIMEOUT_SECONDS,
   * forces the exit.
   *
   * Under a supervisor (WORKERS > 1) a stop comes twice: the supervisor passes it on by message,
   * and the signal itself reaches the worker too when it went to the whole process group (Ctrl-C
   * in a terminal, systemd's KillMode=control-group, `kill -- -PGID`). Those two are one stop:
   * the supervisor's message never counts as a second signal, and the first direct signal of the
   * same kind after it neither. Nor does the same signal again within SAME_SIGNAL_MS: one Ctrl-C
   * under npm comes twice. Only a further signal, or the supervisor's `force`, exits at once.
   *
   * The handlers are in place while the server starts: a stop asked for then is carried out
   * once it has started (a second signal exits at once).
   */
  const stop = async (signal: NodeJS.Signals, from: 'signal' | 'supervisor') => {
    if (stopping) {
      if (from === 'supervisor') return; // the same stop, passed on
      if (stopping.bySupervisor && signal === stopping.signal && !stopping.directSeen) {
        stopping.directSeen = true; // the process group's copy of the supervisor's signal
        logger.info({ signal }, 'signal also received directly: already stopping');
        return;
      }
      if (from === 'signal' && repeats(stopping, signal)) {
        logger.info({ signal }, 'the same signal again (from the process group and from a wrapper such as npm): already stopping');
        return;
      }
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = { signal, at: systemClock.now().getTime(), bySupervisor: from === 'supervisor', directSeen: from === 'signal' };
    const force = setTimeout(() => {
      logger.error({ timeoutSeconds: config.shutdown.timeoutMs / 1000 }, 'shutdown did not finish in time; exiting');
      process.exit(1);
    }, config.shutdown.timeoutMs);
    force.unref();
    // A stop asked for while starting waits for the start (a failed start exits on its own).
    const server = await started?.catch(() => undefined);
    if (!server) return;
    // SIGTERM drains first; SIGINT (Ctrl-C) stops at once.
    await server.stop({ drainMs: signal === 'SIGTERM' ? config.shutdown.drainMs : 0, reason: signal });
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM', 'signal'));
  process.on('SIGINT', () => void stop('SIGINT', 'signal'));
  if (cluster.isWorker) {
    process.on('message', (message: unknown) => {
      const m = message as SupervisorMessage | undefined;
      if (m?.type === STOP_MESSAGE && (m.signal === 'SIGTERM' || m.signal === 'SIGINT')) void stop(m.signal, 'supervisor');
      else if (m?.type === FORCE_MESSAGE) {
        logger.warn('the supervisor forces the exit: exiting now');
        process.exit(1);
      }
    });
  }
  // A worker's supervisor has migrated already: the worker only checks that nothing is pending.
  started = start(config, { logger, migrate: config.migrateOnStart && cluster.isPrimary ? 'apply' : 'verify' });
  const running = await started;
  logger.info(
    { hashConcurrency: config.web.hashConcurrency, hashQueue: config.web.hashQueue, threadPool: Number(process.env.UV_THREADPOOL_SIZE) || LIBUV_DEFAULT_THREADS },
    "password hashing: at most hashConcurrency at once and hashQueue waiting, on libuv's threadPool threads",
  );
  announceListening((running.server.address() as AddressInfo).port);
}

/** Messages from the supervisor to its workers (node:cluster's IPC channel). */
const STOP_MESSAGE = 'trs:stop';
const FORCE_MESSAGE = 'trs:force';
type SupervisorMessage = { type: typeof STOP_MESSAGE; signal: NodeJS.Signals } | { type: typeof FORCE_MESSAGE };

/**
 * WORKERS > 1: this process migrates the database (and serves the embedded one, which the
 * workers join), then forks that many server processes sharing the port, replaces any that
 * dies, and on a signal has them stop gracefully. It tells them by message, not by a signal,
 * so that a worker that also got the signal itself (the whole process group was signalled)
 * sees one stop, not two. Its own second signal, or SHUTDOWN_TIMEOUT_SECONDS and a few seconds
 * more, forces every worker out and exits 1; it also exits 1 when a worker did not stop cleanly.
 */
async function supervise(config: Config, logger: Logger): Promise<void> {
  const database = await connectDatabase(config, logger, { migrate: config.migrateOnStart ? 'apply' : 'verify' });
  let stopping: FirstSignal | undefined;
  cluster.once('listening', (_worker, address) => announceListening(address.port));
  // libuv sizes a process's thread pool from its environment at start, before any code of ours:
  // the workers get one with room for password hashing beside DNS and file writes (config.ts).
  const fork = () => cluster.fork(config.workerThreadPool ? { UV_THREADPOOL_SIZE: String(config.workerThreadPool) } : undefined);
  for (let i = 0; i < config.workers; i++) fork();
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    logger.error({ pid: worker.process.pid, code, signal }, 'worker died; starting another');
    fork();
  });
  const alive = () => Object.values(cluster.workers ?? {}).filter((w) => w !== undefined && !w.isDead());
  /** Sends a message; a worker whose channel is gone gets `fallback` as a signal instead. */
  const send = (w: Worker, message: SupervisorMessage, fallback: NodeJS.Signals) => {
    const orSignal = () => void w.process.kill(fallback);
    if (!w.isConnected()) return orSignal();
    try {
      w.send(message, undefined, undefined, (err: Error | null) => err && orSignal());
    } catch {
      orSignal();
    }
  };
  let forced = false;
  const forceAll = (why: string) => {
    if (forced) return;
    forced = true;
    logger.warn({ workers: alive().length }, `${why}: forcing the workers out`);
    for (const w of alive()) send(w!, { type: FORCE_MESSAGE }, 'SIGKILL');
    // A worker that does not take the message (blocked, or its channel gone) is killed.
    setTimeout(() => {
      for (const w of alive()) w!.process.kill('SIGKILL');
      process.exit(1);
    }, 2_000).unref();
  };
  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) {
      // One Ctrl-C under npm comes twice (the process group's, and npm's copy): one stop.
      if (repeats(stopping, signal)) {
        logger.info({ signal }, 'the same signal again (from the process group and from a wrapper such as npm): already stopping');
        return;
      }
      forceAll('second signal');
      return;
    }
    stopping = { signal, at: systemClock.now().getTime() };
    const deadline = setTimeout(() => forceAll('shutdown did not finish in time'), config.shutdown.timeoutMs + 5_000);
    const workers = alive();
    logger.info({ signal, workers: workers.length }, 'stopping: telling the worker processes to stop');
    const codes = await Promise.all(
      workers.map(
        (w) =>
          new Promise<number | null>((resolve) => {
            w!.once('exit', (code: number | null) => resolve(code));
            send(w!, { type: STOP_MESSAGE, signal }, signal);
          }),
      ),
    );
    clearTimeout(deadline);
    await database.close();
    const clean = !forced && codes.every((code) => code === 0);
    if (clean) logger.info('stopped: every worker process has exited');
    else logger.error({ codes }, 'stopped: a worker process did not stop cleanly');
    process.exit(clean ? 0 : 1);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  logger.info({ workers: config.workers, threadPool: config.workerThreadPool ?? process.env.UV_THREADPOOL_SIZE ?? 'default' }, 'started worker processes');
}
