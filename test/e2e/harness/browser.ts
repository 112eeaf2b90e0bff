/** Debian's Chromium, headless, for the status page's browser tests (playwright-core downloads no browser). */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { INSTALL_HINTS } from './tools.js';

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

/** Throws with the install command when Chromium is missing. */
export function requireChromium(): void {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing; install it with: ${INSTALL_HINTS.chromium}`);
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

/** A new page `width` px wide (900 high) at `url`. */
export async function openAt(browser: Browser | undefined, url: string, width: number): Promise<Page> {
  if (!browser) throw new Error('no browser');
  const page = await browser.newPage({ viewport: { width, height: 900 } });
  await page.goto(url);
  return page;
}
