import path from 'node:path';
import { z } from 'zod';

/**
 * The signed rule sets' settings slice: its variables (merged into the configuration's one schema
 * by src/config.ts, which reads and checks the environment once) and what the area is handed. A
 * settings slice imports nothing of its area (.dependency-cruiser.cjs).
 */

/** Its environment variables (docs/configuration.md). */
export const rulesVariables = {
  RULES_DIR: z.string().min(1).optional(),
  RULES_SIGNING_KEY_FILE: z.string().min(1).optional(),
};

type Env = z.infer<z.ZodObject<typeof rulesVariables>>;

export interface RulesSettings {
  /** Signed rule sets: the folder of `<name>.json` files and the Ed25519 key that signs them. */
  rules: { dir: string; signingKeyFile: string | undefined };
}

export function rulesSettings(e: Env, common: { dataDir: string }): RulesSettings {
  return { rules: { dir: e.RULES_DIR ?? path.join(common.dataDir, 'rules'), signingKeyFile: e.RULES_SIGNING_KEY_FILE } };
}
