/**
 * Debian's Chromium (`apt-get install chromium`, as .ci/run does), driven by playwright-core, for
 * the pages the store serves (/docs, the operator page): their tests and the operator page's
 * screenshot (scripts/operator-screenshot.ts). CHROMIUM_PATH overrides where it is.
 */
import fs from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Launches headless Chromium, without the network features a test does not want.
 * @param extraArgs more command-line switches, e.g. `--host-resolver-rules=MAP store.lan 127.0.0.1`
 *   (a DNS name for the store without a resolver)
 * @throws Error when there is no Chromium at `chromiumPath`
 */
export async function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  if (!fs.existsSync(chromiumPath)) throw new Error(`no Chromium at ${chromiumPath}: apt-get install chromium, or set CHROMIUM_PATH`);
  return chromium.launch({
    executablePath: chromiumPath,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', ...extraArgs],
  });
}
