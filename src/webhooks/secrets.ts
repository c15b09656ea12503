import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Webhook signing secrets sealed at rest (WEBHOOK_SECRETS_KEY). A signing secret cannot be
 * hashed as an API key is (the server needs it to sign), so with keys configured it is stored
 * AES-256-GCM-sealed: `sealed:v1:<key id>:<base64 of iv, ciphertext and tag>`, the key id the
 * first 8 hex digits of the key's SHA-256. A database dump alone then signs nothing.
 *
 * Several keys (comma-separated) rotate: the first seals, every one opens; a secret found in
 * clear (stored before a key was set) or sealed with a later key is `stale`, and the service
 * seals it again with the first key the next time it signs with it.
 */
export class SecretBox {
  private readonly keys: { id: string; key: Buffer }[];

  /** `keys`: 32-byte keys, the first the one that seals; none: secrets stay in clear. */
  constructor(keys: readonly Buffer[]) {
    this.keys = keys.map((key) => {
      if (key.length !== 32) throw new Error('WEBHOOK_SECRETS_KEY: each key must be 32 bytes (openssl rand -base64 32)');
      return { id: createHash('sha256').update(key).digest('hex').slice(0, 8), key };
    });
  }

  /** The secret as it is to be stored: sealed with the first key, or in clear without one. */
  seal(secret: string): string {
    const current = this.keys[0];
    if (!current) return secret;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', current.key, iv);
    const sealed = Buffer.concat([iv, cipher.update(secret, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `sealed:v1:${current.id}:${sealed.toString('base64')}`;
  }

  /**
   * The secret a stored value holds, and whether it should be sealed again (in clear while a
   * key is set, or sealed with a key other than the first). Throws when no configured key
   * opens it (the key that sealed it was removed) or it was altered.
   */
  open(stored: string): { secret: string; stale: boolean } {
    if (!stored.startsWith('sealed:')) return { secret: stored, stale: this.keys.length > 0 };
    const [, version, id, data] = stored.split(':');
    const entry = this.keys.find((k) => k.id === id);
    if (version !== 'v1' || !entry || !data) throw new Error(`the webhook's secret is sealed with key ${id ?? '?'}, which WEBHOOK_SECRETS_KEY does not hold`);
    const bytes = Buffer.from(data, 'base64');
    const decipher = createDecipheriv('aes-256-gcm', entry.key, bytes.subarray(0, 12));
    decipher.setAuthTag(bytes.subarray(bytes.length - 16));
    const secret = Buffer.concat([decipher.update(bytes.subarray(12, bytes.length - 16)), decipher.final()]).toString('utf8');
    return { secret, stale: entry !== this.keys[0] };
  }
}
