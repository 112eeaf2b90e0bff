/**
 * The status page at / in a real headless Chromium (playwright-core). Two stacks against two
 * in-process simulators: `primary` answers everything but `license` (503 from the start) and
 * `metrics_data` (403, so it backs off for 14.5 minutes), with `data_ingestion_next` disabled and
 * the example saved queries plus one the field metadata refuses; and `hostile` refuses the token
 * with a message full of markup and tracks no names and no queries. The page must put
 * what needs attention first, show each stack's endpoints with their state (disabled and untracked
 * ones too), the failure with its outcome, error and hint, a future time as "in 14m", never show
 * the CMDB's own words (the markup neither as text nor as elements), link to the other endpoints,
 * and never show a secret. A second part runs 200 stacks and checks the summary
 * table. Screenshots are kept in artifacts/screenshots/ (or E2E_ARTIFACTS_DIR).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATA_ENDPOINTS } from '../../src/api/endpoints.js';
import { PLANTED_SECRETS } from '../../src/simulator/api.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { FAST_INTERVALS, startExporter, waitUntilReady, writeExporterConfig, type RunningExporter } from '../helpers/exporter.js';
import { launchChromium, requireChromium } from './harness/browser.js';
import { stopAllAndCheck } from './harness/processes.js';
import { leakedSecrets, makeTempDir, removeDir, REPO_ROOT } from './harness/tools.js';
import { exampleQueries } from '../helpers/queries.js';
import { notYet, waitFor } from '../helpers/wait.js';

/** A saved query the field metadata refuses: a quoted number on an Integer field. */
const QUOTED = { name: 'quoted-number', table: 'asset', query: [[{ searchFieldName: 'High_CVE', operator: '==', value: '5' }]] };

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
  requireChromium();
  dir = makeTempDir('landing');
  // Kept after the run (CI keeps the folder as an artifact); gitignored.
  artifacts = process.env.E2E_ARTIFACTS_DIR ?? join(REPO_ROOT, 'artifacts', 'screenshots');
  mkdirSync(artifacts, { recursive: true });
  primary = await startSimulator({
    secret: PRIMARY_SECRET,
    faults: [
      { endpoint: 'license', status: 503 },
      { endpoint: 'metrics_data', status: 403 },
    ],
  });
  sims.push(primary);
  hostile = await startSimulator({
    secret: HOSTILE_SECRET,
    faults: [{ endpoint: 'access_token', status: 401, body: JSON.stringify({ code: 401002, message: HOSTILE_TEXT }) }],
  });
  sims.push(hostile);
  const track = { assets: primary.state().trackedAssets, users: primary.state().trackedUsers };
  const configFile = writeExporterConfig(dir, {
    defaults: { rateLimitPerMinute: 6000, actionJobsPerMinute: 6000, retries: { max: 0 }, intervals: FAST_INTERVALS },
    stacks: [
      {
        name: 'primary',
        baseUrl: primary.url,
        clientId: primary.clientId,
        secret: '${E2E_PRIMARY_SECRET}',
        track,
        disabledEndpoints: ['data_ingestion_next'],
        queries: [...exampleQueries(), QUOTED],
        // 14.5 minutes: the next attempt reads "in 14m" during the first minute after the 403.
        forbiddenBackoffSeconds: 870,
      },
      { name: 'hostile', baseUrl: hostile.url, clientId: hostile.clientId, secret: '${E2E_HOSTILE_SECRET}' },
    ],
  });
  exporter = await startExporter({
    args: ['--config', configFile],
    env: { E2E_PRIMARY_SECRET: PRIMARY_SECRET, E2E_HOSTILE_SECRET: HOSTILE_SECRET },
  });
  await waitUntilReady(exporter);
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(`${exporter.url}/`);
});

afterAll(async () => {
  await browser?.close();
  await stopAllAndCheck(async () => {
    await Promise.all(sims.map((s) => s.close()));
    removeDir(dir);
  });
});

function readTables(): Promise<StackTable[]> {
  return page.$$eval('section.stack', (sections) =>
    sections.map((section) => ({
      heading: section.querySelector('h2')?.textContent ?? '',
      rows: [...section.querySelectorAll('table.endpoints tbody tr')].map((tr) => {
        const cells = [...tr.querySelectorAll('td')].map((td) => td.textContent?.trim() ?? '');
        return { endpoint: cells[0] ?? '', state: cells[1] ?? '', rowClass: tr.className, outcome: cells[2] ?? '', details: cells[8] ?? '' };
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
    const healthy = rows.filter((r) => !['license', 'metrics_data', 'data_ingestion_next'].includes(r.endpoint));
    expect(healthy.map((r) => [r.endpoint, r.state, r.rowClass, r.outcome])).toEqual(healthy.map((r) => [r.endpoint, 'ok', 'ok', 'success']));
    const license = rows.find((r) => r.endpoint === 'license');
    expect(license).toMatchObject({ state: 'failing', rowClass: 'failing', outcome: '503' });
    expect(license?.details).toContain('GET /CMDB/v2/system/metrics/license: 503 Service Unavailable');
    expect(license?.details).toContain("check the service's health");
  });

  it('lists the disabled and the untracked endpoints with the reason they are not polled', async () => {
    const next = table(await readTables(), 'primary').rows.find((r) => r.endpoint === 'data_ingestion_next');
    expect(next).toMatchObject({ state: 'disabled (disabledEndpoints)', rowClass: 'skipped' });
    const untracked = table(await readTables(), 'hostile').rows.filter((r) => r.rowClass === 'skipped');
    expect(untracked.map((r) => [r.endpoint, r.state]).sort()).toEqual([
      ['asset_change', 'not polled: no tracked names'],
      ['data_metadata', 'not polled: no saved queries'],
      ['data_query', 'not polled: no saved queries'],
      ['user_change', 'not polled: no tracked names'],
    ]);
  });

  it('lists the saved queries with their counts, and the refused one with the query, the criterion and what to write', async () => {
    // The first counts follow the first read of the connector history: wait for them on the page.
    const rows = async () => {
      await page.reload();
      return page.$$eval('section.stack table.queries tbody tr', (trs) => trs.map((tr) => ({ rowClass: tr.className, cells: [...tr.querySelectorAll('td')].map((td) => td.textContent?.trim() ?? '') })));
    };
    const seen = await waitFor('every saved query counted or refused on the page', async () => {
      const now = await rows();
      return now.some((r) => r.rowClass === 'pending') ? notYet(now) : now;
    }, { intervalMs: 1000 });
    expect(seen.map((r) => r.cells[0])).toEqual([...exampleQueries().map((q) => q.name), QUOTED.name]);
    for (const r of seen.slice(0, -1)) {
      expect(r.rowClass).toBe('ok');
      expect(r.cells[3]).toMatch(/^\d[\d,]*$/);
    }
    const refused = seen.at(-1);
    expect(refused?.rowClass).toBe('failing');
    expect(refused?.cells[2]).toBe('refused: not sent, fix the query');
    expect(refused?.cells[3]).toBe('—');
    expect(refused?.cells[7]).toContain('query "quoted-number": criterion [0][0] (High_CVE ==): "5" is a quoted number');
    expect(refused?.cells[7]).toContain('write 5 without quotes');
    // And up top, in what needs attention: a line of its own, linked to its runbook section.
    const attention = await page.$$eval('#attention li', (lis) => lis.map((li) => ({ text: li.textContent ?? '', runbook: li.querySelector('a.runbook')?.getAttribute('href') ?? '' })));
    const line = attention.find((l) => l.text.includes(`query ${QUOTED.name}: refused, not sent`));
    expect(line, JSON.stringify(attention)).toBeDefined();
    expect(line?.runbook).toBe('docs/alerts#cmdbqueryrefused');
    await page.screenshot({ path: join(artifacts, 'landing-queries.png'), fullPage: true });
  });

  it('reads the next attempt of the forbidden endpoint as "in 14m …", never "from now"', async () => {
    const row = table(await readTables(), 'primary').rows.find((r) => r.endpoint === 'metrics_data');
    expect(row).toMatchObject({ state: 'forbidden: grant the permission or disable the endpoint', outcome: 'forbidden' });
    expect(row?.details).toMatch(/next attempt \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(in 14m( \d+s)?\)/);
    expect(await page.locator('body').innerText()).not.toContain('from now');
  });

  it('puts what needs attention first: the summary of both stacks, then the problems per stack', async () => {
    const order = await page.$$eval('body > section', (sections) => sections.map((s) => (s.classList.contains('stack') ? 'stack' : s.id)));
    expect(order.slice(0, 3)).toEqual(['summary', 'attention', 'stack']);
    const summary = await page.$$eval('#summary tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent?.trim())));
    expect(summary.map((r) => r[0]).sort()).toEqual(['hostile', 'primary']);
    const problems = await page.$$eval('#attention .stack-attention', (blocks) =>
      Object.fromEntries(blocks.map((b) => [b.getAttribute('data-stack'), [...b.querySelectorAll('li')].map((li) => li.textContent?.trim() ?? '')])),
    );
    // Each line says since when (and "new" while its endpoint has not polled again).
    const since = String.raw` since \d\d:\d\d UTC \((\d+m )?\d+s\)`;
    expect(problems.primary).toEqual(
      expect.arrayContaining([
        expect.stringMatching(new RegExp(`^warning( new)? endpoint license: down \\(503\\)${since} what to do$`)),
        expect.stringMatching(new RegExp(`^warning( new)? endpoint metrics_data: forbidden \\(403\\), next attempt in 14m( \\d+s)?${since} what to do$`)),
      ]),
    );
    // The rejected token is the cause of stack hostile: first, critical, its endpoints folded under it.
    expect(problems.hostile?.[0]).toMatch(/^critical( new)? credentials rejected: the token endpoint rejects the stack's client id and secret/);
    expect((problems.hostile ?? []).filter((p: string) => p.includes('endpoint') && p.startsWith('warning')).length).toBeGreaterThan(5);
    // Its own refresh says when it was made: the next page marks new only what appeared after it.
    const made = Date.parse((await page.locator('#made time').getAttribute('datetime')) ?? '');
    const refresh = (await page.locator('meta[http-equiv="refresh"]').getAttribute('content')) ?? '';
    expect(refresh).toMatch(/^30;url=\?seen=\d+$/);
    expect(Math.abs(Number(refresh.split('=').at(-1)) - made)).toBeLessThan(1000);
  });

  it('marks nothing new that the viewer was shown on the page before: "new" stays until it has been seen', async () => {
    const lines = async () =>
      page.$$eval('#attention li', (lis) => lis.map((li) => ({ key: `${li.querySelector('a.runbook')?.getAttribute('href') ?? ''} ${li.querySelector('code')?.textContent ?? ''}`, isNew: li.querySelector(':scope > .new') !== null })));
    await page.goto(`${exporter.url}/`);
    const before = await lines();
    const refresh = (await page.locator('meta[http-equiv="refresh"]').getAttribute('content')) ?? '';
    // Where the page's own refresh goes, at once rather than in 30 s.
    await page.goto(`${exporter.url}/${refresh.slice(refresh.indexOf('url=') + 4)}`);
    const after = await lines();
    const shown = new Set(before.map((l) => l.key));
    expect(after.filter((l) => shown.has(l.key) && l.isNew)).toEqual([]);
    expect(after.length).toBeGreaterThan(0);
  });

  it('fills the details of every endpoint row: the series a healthy one serves, why a skipped one is not polled', async () => {
    const rows = table(await readTables(), 'primary').rows;
    expect(rows.filter((r) => r.details === '')).toEqual([]);
    for (const r of rows.filter((x) => x.rowClass === 'ok')) expect(r.details, r.endpoint).toMatch(/^\d[\d,]* series$/);
    expect(rows.find((r) => r.endpoint === 'data_ingestion_next')?.details).toBe('remove it from disabledEndpoints to poll it');
  });

  it("never shows the CMDB's hostile text: status and code only, no element is injected and no script runs", async () => {
    const rows = table(await readTables(), 'hostile').rows;
    expect(rows.filter((r) => r.state === 'ok')).toEqual([]);
    const told = rows.filter((r) => r.details.startsWith(`POST /CMDB/v1/access_token: token rejected: 401 Unauthorized, code 401002, a message of ${HOSTILE_TEXT.length} characters (not shown)`));
    expect(told.length, JSON.stringify(rows)).toBeGreaterThan(0);
    expect(await page.content()).not.toContain('window.__injected');
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
    await page.locator('#attention').screenshot({ path: join(artifacts, 'landing-attention.png') });
    expect(existsSync(file)).toBe(true);
    console.log(`status page screenshots: ${artifacts}`);
  });
});

describe('the status page of 200 stacks in headless Chromium', () => {
  const STACKS = 200;
  let many: RunningExporter;

  beforeAll(async () => {
    // The page of 200 stacks, not 200 stacks' worth of data: a small CMDB each (one Action, one
    // ingestion run, two connectors), so that their first polls (~25 requests a stack at the default
    // size) do not hold both cores for minutes while the other e2e files run beside this one.
    const sim = await startSimulator({ secret: PRIMARY_SECRET, seed: 200, size: { connectors: 2, actions: 1, jobsPerAction: 1, ingestionRuns: 1, tasksPerRun: 1 } });
    sims.push(sim);
    const configFile = writeExporterConfig(
      dir ?? makeTempDir('landing'),
      {
        defaults: { rateLimitPerMinute: 6000, actionJobsPerMinute: 6000, retries: { max: 0 } },
        stacks: Array.from({ length: STACKS }, (_, i) => ({
          name: `stack-${String(i).padStart(3, '0')}`,
          baseUrl: sim.url,
          clientId: sim.clientId,
          secret: '${E2E_PRIMARY_SECRET}',
        })),
      },
      'many.yaml',
    );
    many = await startExporter({ name: 'exporter-200', args: ['--config', configFile], env: { E2E_PRIMARY_SECRET: PRIMARY_SECRET } });
    await waitUntilReady(many, 90_000);
  });

  it('renders the summary table with one row per stack, linking to each section (screenshot saved)', async () => {
    if (!browser) throw new Error('no browser');
    const big = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const started = Date.now();
    await big.goto(`${many.url}/`);
    const loadMs = Date.now() - started;
    const rows = await big.$$eval('#summary tbody tr', (trs) => trs.map((tr) => tr.querySelector('a')?.getAttribute('href') ?? ''));
    expect(rows).toHaveLength(STACKS);
    expect(rows[0]).toBe('#stack-stack-000');
    expect(await big.locator('section.stack').count()).toBe(STACKS);
    expect(await big.locator('#stack-stack-199').count()).toBe(1);
    const html = await big.content();
    expect(leakedSecrets(html, [PRIMARY_SECRET]), 'secrets in the page source').toEqual([]);
    await big.screenshot({ path: join(artifacts, 'landing-200-stacks.png') });
    console.log(`status page of ${STACKS} stacks: ${html.length} bytes, loaded in ${loadMs} ms`);
    await big.close();
  });

  it('reads on a 420 px screen: the summary and every stack fit the width (screenshot saved)', async () => {
    if (!browser) throw new Error('no browser');
    const narrow = await browser.newPage({ viewport: { width: 420, height: 900 } });
    await narrow.goto(`${many.url}/`);
    const width = await narrow.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth);
    expect(width).toBeLessThanOrEqual(420);
    await narrow.screenshot({ path: join(artifacts, 'landing-200-stacks-420px.png') });
    await narrow.close();
  });
});
