/**
 * The status page's lines that say what to do, in a real headless Chromium (playwright-core), at a
 * desktop width and on a 420 px screen: each problem links to its runbook section, a failed Action
 * job names the Action (its id on hover), an expired license gives its date, the endpoint table uses
 * one set of units ("1h", "10s", "in 4s"), a poll in progress reads "polling now", and a rejected
 * reload stays at the top of the page until a good one. At 420 px nothing is wider than the screen.
 * Screenshots are kept in artifacts/screenshots/ (or E2E_ARTIFACTS_DIR): look at them.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { FAST_INTERVALS, startExporter, waitUntilReady, type RunningExporter } from '../helpers/exporter.js';
import { launchChromium, openAt, requireChromium } from './harness/browser.js';
import { stopAllAndCheck } from './harness/processes.js';
import { http, makeTempDir, removeDir, REPO_ROOT } from './harness/tools.js';
import { done, notYet, waitFor } from '../helpers/wait.js';

/** The runbooks the exporter serves itself (docs/alerts.md, rendered), relative to the page. */
const RUNBOOK = 'docs/alerts#';

let dir: string | undefined;
let artifacts: string;
let sim: SimulatorServer;
let exporter: RunningExporter;
let browser: Browser | undefined;
let configFile: string;
let goodConfig: Record<string, unknown>;
let action: { id: string; name: string };
const expiredOn = new Date(Date.now() - 10 * 86_400_000).toISOString().slice(0, 10);

beforeAll(async () => {
  requireChromium();
  dir = makeTempDir('landing-todo');
  artifacts = process.env.E2E_ARTIFACTS_DIR ?? join(REPO_ROOT, 'artifacts', 'screenshots');
  mkdirSync(artifacts, { recursive: true });
  sim = await startSimulator({ live: false });
  const id = sim.state().actionIds[0] ?? '';
  action = { id, name: sim.dataset.actions.get(id)?.row.actionName ?? '' };
  sim.scenario.runActionJob(id, 'FAILED');
  sim.scenario.setLicenseExpiry(expiredOn);
  goodConfig = {
    enableReload: true,
    defaults: { rateLimitPerMinute: 6000, actionJobsPerMinute: 6000, retries: { max: 0 }, intervals: { ...FAST_INTERVALS, license: '1h' } },
    stacks: [{ name: 'lab', baseUrl: sim.url, clientId: sim.clientId, secret: '${E2E_SECRET}', track: { assets: sim.state().trackedAssets, users: [] } }],
  };
  configFile = join(dir, 'exporter.yaml');
  writeFileSync(configFile, stringify(goodConfig));
  exporter = await startExporter({ args: ['--config', configFile], env: { E2E_SECRET: sim.secret } });
  await waitUntilReady(exporter);
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await stopAllAndCheck(async () => {
    await sim?.close();
    removeDir(dir);
  });
});

const open = (width: number): Promise<Page> => openAt(browser, `${exporter.url}/`, width);

async function attentionLines(page: Page): Promise<Array<{ text: string; runbook: string; hover: string }>> {
  return page.$$eval('#attention li', (items) =>
    items.map((li) => ({
      text: li.textContent ?? '',
      runbook: li.querySelector('a.runbook')?.getAttribute('href') ?? '',
      hover: li.querySelector('code')?.getAttribute('title') ?? '',
    })),
  );
}

async function cellOf(page: Page, endpoint: string, column: number): Promise<string> {
  return page.$$eval(
    'table.endpoints tbody tr',
    (rows, [e, c]) => {
      const row = rows.find((r) => r.querySelector('td')?.textContent?.trim() === e);
      return row?.querySelectorAll('td')[c as number]?.textContent?.trim() ?? '';
    },
    [endpoint, column] as const,
  );
}

async function reload(): Promise<{ status: number; text: string }> {
  return http(`${exporter.url}/-/reload`, { method: 'POST', timeoutMs: 20_000 });
}

describe('status page lines that say what to do', () => {
  it('links each problem to its runbook, names the failed Action with its id on hover, gives the expired license date', async () => {
    const page = await open(1400);
    const lines = await attentionLines(page);
    expect(lines.length).toBeGreaterThan(0);
    for (const l of lines) expect(l.runbook, l.text).toMatch(new RegExp(`^${RUNBOOK.replace(/[.]/g, '\\.')}cmdb[a-z]+$`));
    const actionLine = lines.find((l) => l.text.includes('newest job FAILED'));
    expect(actionLine?.text).toContain(`action ${action.name}: newest job FAILED`);
    expect(actionLine?.hover).toBe(`Action id ${action.id}`);
    expect(actionLine?.runbook).toBe(`${RUNBOOK}cmdbactionjobfailed`);
    const license = lines.find((l) => l.text.includes('license'));
    expect(license?.text).toMatch(new RegExp(`license: expired on ${expiredOn} \\(1[01]d( \\d+h)? ago\\)`));
    expect(license?.runbook).toBe(`${RUNBOOK}cmdblicenseexpired`);
    // Units: the license interval reads 1h, the others 10s.
    expect(await cellOf(page, 'license', 3)).toBe('1h');
    expect(await cellOf(page, 'connector', 3)).toBe('10s');
    await page.screenshot({ path: join(artifacts, 'landing-what-to-do-desktop.png'), fullPage: true });
    // The link opens the runbook section on the exporter itself, as docs/alerts.md of this version.
    await page.locator('#attention li', { hasText: 'license: expired' }).locator('a.runbook').click();
    await page.waitForURL(/\/docs\/alerts#cmdblicenseexpired$/);
    expect(await page.locator('h3#cmdblicenseexpired').textContent()).toBe('CmdbLicenseExpired');
    await page.close();
  });

  it('reads "polling now" while a poll runs instead of a next-poll time', async () => {
    // Every connector request now hangs; its poll runs until the interval cuts it off.
    sim.addFault({ endpoint: 'connector', latencyMs: 60_000 });
    const page = await open(1400);
    try {
      const seen = await waitFor(
        'the connector row to read "polling now"',
        async () => {
          await page.reload();
          const next = await cellOf(page, 'connector', 6);
          return next === 'polling now' ? done(next) : notYet(next);
        },
        { timeoutMs: 40_000, intervalMs: 500 },
      );
      expect(seen).toBe('polling now');
      // Other endpoints still say when their next poll is.
      expect(await cellOf(page, 'metrics_data', 6)).toMatch(/^(in \d+s|now|polling now)$/);
    } finally {
      sim.clearFaults();
      await page.close();
    }
  });

  it('keeps a rejected reload at the top until a good reload, and reads on a 420 px screen', async () => {
    writeFileSync(configFile, stringify({ ...goodConfig, stacks: [{ ...(goodConfig.stacks as object[])[0], baseURL: 'x' }] }));
    expect((await reload()).status).not.toBe(200);
    const narrow = await open(420);
    const banner = narrow.locator('#reload-rejected');
    await expect(banner.textContent()).resolves.toContain('Configuration reload rejected');
    await expect(banner.textContent()).resolves.toContain('baseURL: unknown key');
    // At the top: before what needs attention.
    const order = await narrow.$$eval('#reload-rejected, #attention', (els) => els.map((e) => e.id));
    expect(order).toEqual(['reload-rejected', 'attention']);
    // Still there on the next look.
    await narrow.reload();
    expect(await narrow.locator('#reload-rejected').count()).toBe(1);
    // Nothing is wider than the screen; each endpoint's values stack under their column names.
    // (Browser globals, typed here without the DOM library.)
    const width = await narrow.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth);
    expect(width).toBeLessThanOrEqual(420);
    const label = await narrow.$eval('table.endpoints tbody td:nth-child(7)', (td) =>
      (globalThis as unknown as { getComputedStyle: (e: unknown, p: string) => { content: string } }).getComputedStyle(td, '::before').content,
    );
    expect(label).toBe('"next poll"');
    await narrow.screenshot({ path: join(artifacts, 'landing-what-to-do-420px.png'), fullPage: true });

    writeFileSync(configFile, stringify(goodConfig));
    expect((await reload()).status).toBe(200);
    await narrow.reload();
    expect(await narrow.locator('#reload-rejected').count()).toBe(0);
    await narrow.close();
  });
});
