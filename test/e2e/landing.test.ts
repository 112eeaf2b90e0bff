/**
 * The status page at / in a real headless Chromium (playwright-core). Two stacks against two
 * in-process simulators: `primary` answers everything but `license` (503 from the start), and
 * `hostile` refuses the token with a message full of markup, which the exporter quotes in its
 * error text. The page must show each stack's endpoints with their state, the failure with its
 * outcome, scrubbed error and hint, render the markup as text, link to the other endpoints, and
 * never show a secret.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATA_ENDPOINTS } from '../../src/api/endpoints.js';
import { PLANTED_SECRETS } from '../../src/simulator/api.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { FAST_INTERVALS, startExporter, waitUntilReady, writeExporterConfig, type RunningExporter } from './harness/exporter.js';
import { stillRunning, stopAll } from './harness/processes.js';
import { INSTALL_HINTS, leakedSecrets, makeTempDir, removeDir } from './harness/tools.js';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
const PRIMARY_SECRET = `e2e-primary-${randomBytes(8).toString('hex')}`;
const HOSTILE_SECRET = `e2e-hostile-${randomBytes(8).toString('hex')}`;
/** Markup that would add elements or run script if the page did not escape it. */
const HOSTILE_TEXT = `<img src=x onerror="window.__injected=1"><script>window.__injected=2</script><b id="injected">x</b>`;

interface Row {
  endpoint: string;
  state: string;
  rowClass: string;
  outcome: string;
  details: string;
}
interface StackTable {
  heading: string;
  rows: Row[];
}

let dir: string | undefined;
let artifacts: string;
const sims: SimulatorServer[] = [];
let primary: SimulatorServer;
let hostile: SimulatorServer;
let exporter: RunningExporter;
let browser: Browser | undefined;
let page: Page;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing; install it with: ${INSTALL_HINTS.chromium}`);
  dir = makeTempDir('landing');
  // E2E_ARTIFACTS_DIR keeps the screenshot after the run (to look at it); by default it goes with the temp dir.
  artifacts = process.env.E2E_ARTIFACTS_DIR ?? join(dir, 'artifacts');
  mkdirSync(artifacts, { recursive: true });
  primary = await startSimulator({ secret: PRIMARY_SECRET, faults: [{ endpoint: 'license', status: 503 }] });
  sims.push(primary);
  hostile = await startSimulator({
    secret: HOSTILE_SECRET,
    faults: [{ endpoint: 'access_token', status: 401, body: JSON.stringify({ code: 401002, message: HOSTILE_TEXT }) }],
  });
  sims.push(hostile);
  const track = { assets: primary.state().trackedAssets, users: primary.state().trackedUsers };
  const configFile = writeExporterConfig(dir, {
    defaults: { rateLimitPerMinute: 6000, retries: { max: 0 }, intervals: FAST_INTERVALS, track },
    stacks: [
      { name: 'primary', baseUrl: primary.url, clientId: primary.clientId, secret: '${E2E_PRIMARY_SECRET}' },
      { name: 'hostile', baseUrl: hostile.url, clientId: hostile.clientId, secret: '${E2E_HOSTILE_SECRET}' },
    ],
  });
  exporter = await startExporter({
    args: ['--config', configFile],
    env: { E2E_PRIMARY_SECRET: PRIMARY_SECRET, E2E_HOSTILE_SECRET: HOSTILE_SECRET },
  });
  await waitUntilReady(exporter);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(`${exporter.url}/`);
});

afterAll(async () => {
  await browser?.close();
  const stopped = await stopAll();
  await Promise.all(sims.map((s) => s.close()));
  removeDir(dir);
  expect(stillRunning(), 'processes left running').toEqual([]);
  expect(stopped.filter((s) => s.killed).map((s) => s.name), 'processes that ignored SIGTERM').toEqual([]);
});

function readTables(): Promise<StackTable[]> {
  return page.$$eval('section', (sections) =>
    sections.map((section) => ({
      heading: section.querySelector('h2')?.textContent ?? '',
      rows: [...section.querySelectorAll('tbody tr')].map((tr) => {
        const cells = [...tr.querySelectorAll('td')].map((td) => td.textContent?.trim() ?? '');
        return { endpoint: cells[0] ?? '', state: cells[1] ?? '', rowClass: tr.className, outcome: cells[2] ?? '', details: cells[5] ?? '' };
      }),
    })),
  );
}

function table(tables: StackTable[], stack: string): StackTable {
  const found = tables.find((t) => t.heading.startsWith(`Stack ${stack}`));
  if (!found) throw new Error(`no table for stack ${stack}: ${JSON.stringify(tables.map((t) => t.heading))}`);
  return found;
}

describe('the status page in headless Chromium', () => {
  it('shows one table per stack listing every enabled endpoint', async () => {
    const tables = await readTables();
    expect(tables).toHaveLength(2);
    for (const stack of ['primary', 'hostile']) {
      expect(table(tables, stack).rows.map((r) => r.endpoint).sort()).toEqual([...DATA_ENDPOINTS].sort());
    }
    await expect(page.locator('#readiness').textContent()).resolves.toContain('Ready');
  });

  it('marks healthy endpoints ok and the failing one with its outcome, scrubbed error and a hint', async () => {
    const rows = table(await readTables(), 'primary').rows;
    const healthy = rows.filter((r) => r.endpoint !== 'license');
    expect(healthy.map((r) => [r.endpoint, r.state, r.rowClass, r.outcome])).toEqual(healthy.map((r) => [r.endpoint, 'ok', 'ok', 'success']));
    const license = rows.find((r) => r.endpoint === 'license');
    expect(license).toMatchObject({ state: 'failing', rowClass: 'failing', outcome: '503' });
    expect(license?.details).toContain('GET /CMDB/v2/system/metrics/license: 503 Service Unavailable');
    expect(license?.details).toContain("check the service's health");
  });

  it('shows hostile text from the CMDB as text: no element is injected and no script runs', async () => {
    const rows = table(await readTables(), 'hostile').rows;
    expect(rows.filter((r) => r.state === 'ok')).toEqual([]);
    const quoted = rows.filter((r) => r.details.includes('<script>window.__injected=2</script>') && r.details.includes('<img src=x onerror='));
    expect(quoted.length, JSON.stringify(rows)).toBeGreaterThan(0);
    expect(await page.locator('img, script, #injected, [onerror]').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { __injected?: unknown }).__injected)).toBeUndefined();
  });

  it.each([
    ['/metrics', 'metrics', 'cmdb_exporter_build_info'],
    ['/healthz', 'healthz', 'ok'],
    ['/readyz', 'readyz', '"status":"ready"'],
  ])('the %s link opens that endpoint', async (label, path, content) => {
    await page.goto(`${exporter.url}/`);
    await Promise.all([page.waitForURL(`${exporter.url}/${path}`, { timeout: 10_000 }), page.getByRole('link', { name: label, exact: true }).click()]);
    expect(await page.locator('body').innerText()).toContain(content);
    await page.goBack();
  });

  it('shows no client secret, issued token or planted secret, and renders readably (screenshot saved)', async () => {
    await page.goto(`${exporter.url}/`);
    const secrets = [PRIMARY_SECRET, HOSTILE_SECRET, ...primary.issuedTokens(), ...hostile.issuedTokens(), ...PLANTED_SECRETS];
    expect(primary.issuedTokens().length).toBeGreaterThan(0);
    const html = await page.content();
    const text = await page.locator('body').innerText();
    expect(text).toContain('Stack primary');
    expect(leakedSecrets(html, secrets), 'secrets in the page source').toEqual([]);
    expect(leakedSecrets(text, secrets), 'secrets in the page text').toEqual([]);
    const file = join(artifacts, 'landing.png');
    await page.screenshot({ path: file, fullPage: true });
    expect(existsSync(file)).toBe(true);
    console.log(`status page screenshot: ${file}`);
  });
});
