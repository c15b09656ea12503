import cluster from 'node:cluster';
import { ConfigError, loadConfig, type Config } from './config.js';
import { portProblem } from './preflight.js';

/**
 * The process entry. The settings are checked first, and then the port, before anything heavy
 * is loaded (the ORM, Express, the GeoIP data, which take seconds): a bad setting or a port in
 * use is refused at once, and before any database is created or migrated. Then src/process.ts
 * runs the server (or the supervisor of WORKERS processes).
 */
async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
  // Workers share the supervisor's listener: it checked the port for them.
  if (cluster.isPrimary) {
    const problem = await portProblem(config.host, config.port);
    if (problem) {
      console.error(`failed to start: ${problem}`);
      process.exit(1);
    }
  }
  const { run } = await import('./process.js');
  await run(config);
}

main().catch((err: unknown) => {
  console.error('failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
});
