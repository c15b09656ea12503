import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { rulesHandlers } from './handlers.js';
import { Rulesets } from './rulesets.js';

/** The signed rule sets served to the Hive plugin (RULES_DIR, RULES_SIGNING_KEY_FILE). */
export function rulesModule(deps: { logger: Logger; config: Pick<Config, 'rules'> }) {
  const service = new Rulesets(deps.config.rules.dir, deps.config.rules.signingKeyFile, deps.logger);
  return { service, handlers: () => rulesHandlers(service) };
}
