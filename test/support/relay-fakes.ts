export { startSmsProvider, startSmtp } from '../../scripts/support/sinks.js';

/** Waits until `check` holds, polling; fails after `ms`. */
export async function eventually(check: () => Promise<boolean> | boolean, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}
