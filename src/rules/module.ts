import type { Logger } from 'pino';
import { rulesHandlers } from './handlers.js';
import { Rulesets } from './rulesets.js';
import type { RulesSettings } from './settings.js';

/** The signed rule sets served to the Hive plugin (RULES_DIR, RULES_SIGNING_KEY_FILE). */
export function rulesModule(deps: { logger: Logger; settings: RulesSettings['rules'] }) {
  const service = new Rulesets(deps.settings.dir, deps.settings.signingKeyFile, deps.logger);
  return { service, handlers: () => rulesHandlers(service) };
}
