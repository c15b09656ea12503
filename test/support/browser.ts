import { chromium, type Browser } from 'playwright-core';

/**
 * Debian's Chromium, driven by playwright-core (never `playwright install`: nothing is
 * downloaded). The flags keep it off the network: without the background-networking ones it
 * tries Google's hosts at every start, which this closed network refuses.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
