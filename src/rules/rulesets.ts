import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';

/** The rule sets the ReportedIP Hive plugin syncs. */
export const RULESETS = ['waf', 'bot_signatures', 'disposable_domains', 'scan_paths', 'tor_exits'] as const;
export type RulesetName = (typeof RULESETS)[number];

/** The client refuses a payload larger than this (bytes), so the server never serves one. */
export const PAYLOAD_MAX_BYTES = 512 * 1024;

export interface SignedRuleset {
  payload: string;
  signature: string;
  etag: string;
}

/** The 32 raw bytes of an Ed25519 public key in standard base64: the form a client pins. */
export function publicKeyBase64(key: KeyObject): string {
  const der = createPublicKey(key).export({ type: 'spki', format: 'der' });
  return der.subarray(der.length - 32).toString('base64');
}

/** A new signing key: the private key as PKCS#8 PEM (for RULES_SIGNING_KEY_FILE) and its public key. */
export function generateSigningKey(): { privateKeyPem: string; publicKey: string } {
  const { privateKey } = generateKeyPairSync('ed25519');
  return { privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), publicKey: publicKeyBase64(privateKey) };
}

export async function readSigningKey(file: string): Promise<KeyObject> {
  const key = createPrivateKey(await readFile(file, 'utf8'));
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`${file} holds a ${key.asymmetricKeyType} key; rule sets are signed with Ed25519`);
  return key;
}

/**
 * Rule sets the operator publishes as files `RULES_DIR/<name>.json` holding
 * `{"version": <integer>, "rules": [...]}`, served signed: `payload` is the JSON text
 * `{"key", "version", "rules"}` and `signature` the Ed25519 signature of exactly its bytes, in
 * standard base64, as the Hive plugin verifies it. A file is read again when it changes; one
 * that is missing, malformed or over 512 KiB is not served (and logged), and without a signing
 * key nothing is.
 */
export class Rulesets {
  private key: Promise<KeyObject> | undefined;
  private readonly signed = new Map<RulesetName, { stamp: string; ruleset: SignedRuleset | undefined }>();

  constructor(
    private readonly dir: string,
    private readonly keyFile: string | undefined,
    private readonly logger?: Logger,
  ) {}

  /** The signed rule set, or undefined when it is not published. */
  async get(name: RulesetName): Promise<SignedRuleset | undefined> {
    if (!this.keyFile) return undefined;
    const file = path.join(this.dir, `${name}.json`);
    let stamp: string;
    try {
      const s = await stat(file);
      stamp = `${s.mtimeMs}:${s.size}`;
    } catch {
      return undefined;
    }
    const cached = this.signed.get(name);
    if (cached?.stamp === stamp) return cached.ruleset;
    const ruleset = await this.load(name, file);
    this.signed.set(name, { stamp, ruleset });
    return ruleset;
  }

  private async load(name: RulesetName, file: string): Promise<SignedRuleset | undefined> {
    let content: { version?: unknown; rules?: unknown };
    try {
      content = JSON.parse(await readFile(file, 'utf8')) as typeof content;
    } catch (err) {
      this.logger?.warn({ ruleset: name, file, err: (err as Error).message }, 'rule set file is not JSON; not served');
      return undefined;
    }
    const version = content?.version ?? 1;
    if (!Array.isArray(content?.rules) || !Number.isInteger(version)) {
      this.logger?.warn({ ruleset: name, file }, 'rule set file must be {"version": <integer>, "rules": [...]}; not served');
      return undefined;
    }
    const payload = JSON.stringify({ key: name, version, rules: content.rules });
    const bytes = Buffer.byteLength(payload, 'utf8');
    if (bytes > PAYLOAD_MAX_BYTES) {
      this.logger?.warn({ ruleset: name, bytes, max: PAYLOAD_MAX_BYTES }, 'rule set is larger than clients accept; not served');
      return undefined;
    }
    this.key ??= readSigningKey(this.keyFile!).catch((err: unknown) => {
      this.key = undefined;
      throw err;
    });
    const signature = sign(null, Buffer.from(payload, 'utf8'), await this.key).toString('base64');
    const etag = `"rs-${createHash('sha256').update(payload).digest('hex').slice(0, 20)}"`;
    this.logger?.info({ ruleset: name, version, rules: content.rules.length, bytes }, 'rule set signed');
    return { payload, signature, etag };
  }
}
