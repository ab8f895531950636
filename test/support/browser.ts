/**
 * Debian's Chromium for the tests of the pages the store serves, found like every other program
 * a test runs (support/host-program.ts): missing, the test fails naming the package.
 */
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { chromiumPath, launchChromium } from '../../scripts/lib/browser.js';
import { requireProgram } from './host-program.js';

/**
 * Launches headless Chromium through scripts/lib/browser.ts (the screenshot script's launcher).
 * @param extraArgs more command-line switches, as launchChromium takes them
 * @throws Error naming the `chromium` package when there is none, or CHROMIUM_PATH when the one
 *   found is not the one scripts/lib/browser.ts launches (CHROMIUM_PATH, else /usr/bin/chromium)
 */
export async function launchBrowser(extraArgs: string[] = []): Promise<Browser> {
  const found = requireProgram('chromium');
  if (path.resolve(found) !== path.resolve(chromiumPath)) {
    throw new Error(`chromium is at ${found}, but scripts/lib/browser.ts launches ${chromiumPath}: set CHROMIUM_PATH=${found}`);
  }
  return launchChromium(extraArgs);
}
