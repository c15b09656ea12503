import type { TestContext } from 'vitest';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { missingTools, requireTools } from '../support/tools.js';

/**
 * The check of the tools a test needs (test/support/tools.ts): it names exactly what is missing,
 * skips with that note on a developer's machine, and fails under CI=true.
 */
const ci = process.env.CI;
afterEach(() => {
  if (ci === undefined) delete process.env.CI;
  else process.env.CI = ci;
});

describe('missingTools', () => {
  it('names exactly the tools and package files that are missing, nothing when all are there', () => {
    expect(missingTools(['sh', 'node'])).toBeUndefined();
    expect(missingTools(['trs-no-such-tool', 'sh', 'trs-nor-this-one'])).toBe('needs trs-no-such-tool, trs-nor-this-one: not installed');
    expect(missingTools(['sh'], { files: { fail2ban: '/nonexistent/fail2ban/action.d/abuseipdb.conf' } })).toBe('needs fail2ban: not installed');
    expect(missingTools(['$(touch /tmp/trs-pwned)'])).toBe('needs $(touch /tmp/trs-pwned): not installed'); // a name, never run
  });
});

describe('requireTools', () => {
  const context = () => ({ skip: vi.fn() }) as unknown as TestContext & { skip: ReturnType<typeof vi.fn> };

  it('skips with the note naming what is missing', () => {
    delete process.env.CI;
    const ctx = context();
    requireTools(ctx, 'needs ipset: not installed');
    expect(ctx.skip).toHaveBeenCalledWith('needs ipset: not installed');
  });

  it('fails instead under CI=true, naming it', () => {
    process.env.CI = 'true';
    const ctx = context();
    expect(() => requireTools(ctx, 'needs ipset: not installed')).toThrow(/^needs ipset: not installed \(CI=true: /);
    expect(ctx.skip).not.toHaveBeenCalled();
  });

  it('lets the test run when nothing is missing', () => {
    process.env.CI = 'true';
    const ctx = context();
    requireTools(ctx, undefined);
    expect(ctx.skip).not.toHaveBeenCalled();
  });
});
