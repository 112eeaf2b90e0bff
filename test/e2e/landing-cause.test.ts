/**
 * The status page with the CMDB down for one of two stacks, in a real headless Chromium at a desktop
 * width and on a 420 px screen: the stack whose CMDB stopped answering leads with its cause, one
 * critical line (red) that says since when and how old the data below it is, with the endpoint
 * lines it explains folded under it; its state reads critical in red in the summary and in its
 * heading; its "what to do" link opens the runbook the exporter serves itself; the other stack is
 * untouched. The cause shows within one poll interval of the first failing request (issue 37:
 * before, a minute after the first failure at the earliest), since when that request was sent.
 * Screenshots are kept in artifacts/screenshots/ (or E2E_ARTIFACTS_DIR).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { FAST_INTERVALS, startExporter, waitUntilReady, writeExporterConfig, type RunningExporter } from '../helpers/exporter.js';
import { launchChromium, openAt, requireChromium } from './harness/browser.js';
import { stopAllAndCheck } from './harness/processes.js';
import { http, makeTempDir, removeDir, REPO_ROOT } from './harness/tools.js';
import { done, notYet, waitFor } from '../helpers/wait.js';

const RED = 'rgb(207, 34, 46)';

let dir: string | undefined;
let artifacts: string;
const sims: SimulatorServer[] = [];
let down: SimulatorServer;
let exporter: RunningExporter;
let browser: Browser | undefined;
/** The first page that led with the cause: the cause's since (unix seconds). */
let firstCause: { since: number } | undefined;
/** Pages asked for after the exporter had logged two endpoints of stack down failing unanswered, without the cause. */
const lateLooks: string[] = [];

/** The endpoints of stack down whose polls the exporter has logged as failing unanswered (no connection, or a timeout). */
function unansweredLogged(output: string): Set<string> {
  const endpoints = new Set<string>();
  for (const line of output.split('\n')) {
    if (!line.includes('"stack":"down"')) continue;
    try {
      const entry = JSON.parse(line) as { endpoint?: string; outcome?: string };
      if (entry.endpoint !== undefined && (entry.outcome === 'network' || entry.outcome === 'timeout')) endpoints.add(entry.endpoint);
    } catch {
      // not a log line of the exporter's
    }
  }
  return endpoints;
}

/** The first `<time datetime>` after `marker` in `html`, as unix seconds. */
function timeAfter(html: string, marker: string): number {
  const at = /<time datetime="([^"]+)"/.exec(html.slice(html.indexOf(marker)))?.[1];
  if (at === undefined || html.indexOf(marker) < 0) throw new Error(`no time after ${marker}`);
  return Date.parse(at) / 1000;
}

beforeAll(async () => {
  requireChromium();
  dir = makeTempDir('landing-cause');
  artifacts = process.env.E2E_ARTIFACTS_DIR ?? join(REPO_ROOT, 'artifacts', 'screenshots');
  mkdirSync(artifacts, { recursive: true });
  const up = await startSimulator({ live: false, seed: 5 });
  down = await startSimulator({ live: false, seed: 6 });
  sims.push(up, down);
  const stack = (name: string, sim: SimulatorServer) => ({ name, baseUrl: sim.url, clientId: sim.clientId, secret: sim.secret, track: { assets: [], users: [] } });
  const configFile = writeExporterConfig(dir, {
    defaults: { rateLimitPerMinute: 6000, actionJobsPerMinute: 6000, retries: { max: 1, minDelaySeconds: 0.5, maxDelaySeconds: 1 }, connectTimeoutSeconds: 2, timeoutSeconds: 5, intervals: FAST_INTERVALS },
    stacks: [stack('up', up), stack('down', down)],
  });
  exporter = await startExporter({ args: ['--config', configFile], env: {} });
  await waitUntilReady(exporter);
  // The CMDB of stack down stops answering: every connection is reset.
  down.addFault({ endpoint: '*', reset: true });
  await waitFor(
    'the status page to lead stack down with its cause',
    async () => {
      // What the exporter had logged before this page was asked for: the page is made per request.
      const failing = unansweredLogged(exporter.proc.output());
      const page = (await http(`${exporter.url}/`)).text;
      if (!page.includes('<li class="critical cause">')) {
        if (failing.size >= 2) lateLooks.push(`after ${[...failing].join(', ')} logged failing`);
        return notYet(page.slice(page.indexOf('id="attention"'), page.indexOf('id="attention"') + 600));
      }
      firstCause = { since: timeAfter(page, '<li class="critical cause">') };
      return done(undefined);
    },
    { timeoutMs: 180_000, intervalMs: 500 },
  );
  // The cause leads from the first failed poll; the browser checks below want the other groups'
  // endpoints down too (each fails at its next poll, 10 s apart), folded under it.
  await waitFor(
    'more than three endpoint lines folded under the cause',
    async () => {
      const page = (await http(`${exporter.url}/`)).text;
      const folded = Number(/<summary>(\d+) line\(s\) it explains<\/summary>/.exec(page)?.[1] ?? 0);
      return folded > 3 ? done(undefined) : notYet(`${folded} folded`);
    },
    { timeoutMs: 180_000, intervalMs: 1000 },
  );
  browser = await launchChromium();
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await stopAllAndCheck(async () => {
    await Promise.all(sims.map((s) => s.close()));
    removeDir(dir);
  });
});

const open = (width: number): Promise<Page> => openAt(browser, `${exporter.url}/`, width);

/** Browser globals, typed here without the DOM library. */
type El = { textContent: string | null; className: string; querySelector(s: string): El | null; querySelectorAll(s: string): El[] };

async function attentionOf(page: Page, stack: string) {
  return page.$eval(
    `#attention .stack-attention[data-stack="${stack}"]`,
    (block, red) => {
      const colorOf = (el: unknown) => (globalThis as unknown as { getComputedStyle(e: unknown): { color: string } }).getComputedStyle(el).color;
      const b = block as unknown as El;
      const state = b.querySelector('h3 .state');
      const first = b.querySelector(':scope > ul > li');
      return {
        state: state?.textContent ?? '',
        stateRed: colorOf(state) === red,
        firstClass: first?.className ?? '',
        firstText: first?.textContent ?? '',
        firstRed: colorOf(first?.querySelector('.sev')) === red,
        folded: [...b.querySelectorAll('ul > li.cause details li')].map((li) => li.textContent ?? ''),
        others: [...b.querySelectorAll(':scope > ul > li:not(.cause)')].map((li) => li.textContent ?? ''),
      };
    },
    RED,
  );
}

async function summaryOf(page: Page, stack: string): Promise<{ state: string; red: boolean }> {
  return page.$eval(
    `#summary tr:has(a[href="#stack-${stack}"]) td.state`,
    (td, red) => ({
      state: (td as unknown as El).textContent ?? '',
      red: (globalThis as unknown as { getComputedStyle(e: unknown): { color: string } }).getComputedStyle(td).color === red,
    }),
    RED,
  );
}

describe('the status page with the CMDB of one stack down', () => {
  it('leads with the cause as soon as two endpoints failed unanswered, since the first failing request was sent', () => {
    const first = down.requests().find((r) => r.status === 0)?.at;
    expect(first).toBeDefined();
    expect(firstCause).toBeDefined();
    const { since } = firstCause as { since: number };
    // Since the first request of the outage (the page rounds to the second).
    expect(Math.abs(since - Math.floor((first as number) / 1000))).toBeLessThanOrEqual(1);
    // Every page asked for once the exporter had logged two endpoints failing led with the cause:
    // the first poll that shows the outage shows its cause (before, it could not lead before a
    // minute after the first failure was known).
    expect(lateLooks).toEqual([]);
  });

  it.each([
    [1400, 'desktop'],
    [420, '420px'],
  ])('at %i px: the cause first, critical in red, with since when and the age of the data; the other stack untouched', async (width, name) => {
    const page = await open(width);
    const down = await attentionOf(page, 'down');
    expect(down.firstClass).toBe('critical cause');
    expect(down.firstText).toMatch(/^critical( new)? CMDB unreachable: none of the last \d+ requests( \(to \d+ endpoints\))? got an answer: each failed to connect or timed out\. since \d\d:\d\d UTC \((\d+m )?\d+s\) The data below is from \d\d:\d\d UTC \((\d+m )?\d+s old\)\. what to do/);
    expect(down.firstRed).toBe(true);
    expect(down.state).toBe('critical');
    expect(down.stateRed).toBe(true);
    // The endpoints' failures are folded under it, each with its own since; no endpoint line outside.
    expect(down.folded.length).toBeGreaterThan(3);
    for (const line of down.folded) expect(line).toMatch(/^warning( new)? endpoint \w+: down \((network|timeout|blocked)\) since \d\d:\d\d UTC/);
    expect(down.others.filter((l) => l.includes(' endpoint '))).toEqual([]);
    expect(await summaryOf(page, 'down')).toEqual({ state: 'critical', red: true });
    // Stack up: no cause, no endpoint down; its endpoint table all ok.
    const up = (await page.$$eval('#attention .stack-attention[data-stack="up"] li', (lis) => lis.map((li) => (li as unknown as El).className + ' ' + ((li as unknown as El).textContent ?? ''))));
    expect(up.filter((l) => l.includes('cause') || l.includes(' endpoint '))).toEqual([]);
    expect(await page.$$eval('#stack-up table.endpoints tbody tr:not(.skipped)', (rows) => rows.map((r) => (r as unknown as El).className))).toSatisfy((c: string[]) => c.length > 5 && c.every((x) => x === 'ok'));
    expect(await page.locator('#made').textContent()).toMatch(/^Made at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\.$/);
    if (width <= 420) {
      const scroll = await page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth);
      expect(scroll).toBeLessThanOrEqual(420);
    }
    await page.locator('#attention li.cause details summary').click();
    await page.screenshot({ path: join(artifacts, `landing-cause-${name}.png`), fullPage: true });
    await page.close();
  });

  it('opens the runbook the exporter serves itself from the cause\'s "what to do"', async () => {
    const page = await open(1400);
    await page.locator('#attention li.cause > a.runbook').click();
    await page.waitForURL(/\/docs\/alerts#cmdbunreachable$/);
    expect(await page.locator('h3#cmdbunreachable').textContent()).toBe('CmdbUnreachable');
    await page.close();
  });
});
