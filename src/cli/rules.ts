import type { Command } from 'commander';
import { loadConfig } from '../config.js';
import { writeFile } from 'node:fs/promises';
import { generateSigningKey, publicKeyBase64, readSigningKey } from '../rules/rulesets.js';
import { type Cli } from './context.js';

/** The `rules` commands: the signing key of the rule sets served to the Hive plugin. */
export function rulesCommands(program: Command, { io, print }: Cli): void {
  const rules = program.command('rules').description('signed rule sets for the ReportedIP Hive plugin (served at /api/v2/rules/{name})');

  rules
    .command('keygen')
    .description('make an Ed25519 signing key: writes the private key (set RULES_SIGNING_KEY_FILE to it) and prints the public key to pin in Hive')
    .requiredOption('--out <file>', 'where to write the private key (PEM, readable by its owner only)')
    .action(async (opts: { out: string }) => {
      const { privateKeyPem, publicKey } = generateSigningKey();
      await writeFile(opts.out, privateKeyPem, { mode: 0o600, flag: 'wx' });
      io.stdout.write(`private key written to ${opts.out}\npublic key (pin it in Hive): ${publicKey}\n`);
    });

  rules
    .command('public-key')
    .description('print the public key of RULES_SIGNING_KEY_FILE, as a Hive site pins it')
    .action(async () => {
      const file = loadConfig(io.env).rules.signingKeyFile;
      if (!file) throw new Error('RULES_SIGNING_KEY_FILE is not set');
      io.stdout.write(`${publicKeyBase64(await readSigningKey(file))}\n`);
    });

}
