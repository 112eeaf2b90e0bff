/** Headless Chromium (the pinned part, scripts/parts) for the status page's browser tests; playwright-core downloads no browser. */
import { chromium, type Browser, type Page } from 'playwright-core';
import { requirePart } from './tools.js';

export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

/** The pinned Chromium's path, fetched on first use; throws saying what to do when it cannot be had. */
export function requireChromium(): string {
  return requirePart('chromium');
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: requireChromium(), args: CHROMIUM_ARGS });
}

/** A new page `width` px wide (900 high) at `url`. */
export async function openAt(browser: Browser | undefined, url: string, width: number): Promise<Page> {
  if (!browser) throw new Error('no browser');
  const page = await browser.newPage({ viewport: { width, height: 900 } });
  await page.goto(url);
  return page;
}
