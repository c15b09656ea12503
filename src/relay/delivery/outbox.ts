import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * The relay's outbox for local development: each message a file instead of a delivery, to be
 * read by the developer (or a test) rather than by a provider.
 */

/**
 * `2026-06-15T12-00-00.123Z_42_1a2b3c.json`: sorts by time, carries the message's reference
 * (cut to the characters safe in a file name) and a random tail, so that two messages never
 * share a name.
 */
export function outboxFileName(at: Date, reference: string | undefined, extension: string): string {
  const time = at.toISOString().replace(/:/g, '-');
  const ref = (reference ?? '').replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[.-]+|[.-]+$/g, '').slice(0, 64);
  return `${time}_${ref === '' ? 'message' : ref}_${randomBytes(3).toString('hex')}.${extension}`;
}

/**
 * Writes the whole file or none: into a hidden temporary file beside it, then a rename (atomic
 * within one file system), so a reader watching the folder never sees half a message. Only
 * the owner may read it: the files hold 2FA codes.
 */
export async function writeOutboxFile(dir: string, name: string, data: string | Uint8Array): Promise<string> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const target = path.join(dir, name);
  const temporary = path.join(dir, `.${name}.tmp`);
  try {
    await writeFile(temporary, data, { mode: 0o600, flag: 'wx' });
    await rename(temporary, target);
  } catch (err) {
    await rm(temporary, { force: true });
    throw err;
  }
  return target;
}
