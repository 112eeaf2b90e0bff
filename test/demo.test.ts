/**
 * `npm run demo` on ports of the user's choosing, saying when a scenario's change will show, what
 * fails by design and what fails by itself later; SIGHUP reloads it. Its Prometheus' rules point the
 * notifications' runbook links at the runbooks the demo's exporter serves.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { demoRuleFiles, DEMO_FOR_SECONDS, durationSeconds, prometheusPages } from '../scripts/demo-prometheus.js';
import { DocsPages } from '../src/server/docs.js';
import { bannerLinks, deadLinks, demoBanner } from './helpers/banner-links.js';
import { freePort } from './helpers/daemon.js';
import { waitFor } from './helpers/wait.js';

const DEMO = fileURLToPath(new URL('../scripts/demo.ts', import.meta.url));

describe('npm run demo', () => {
  it('takes DEMO_SIMULATOR_PORT and DEMO_EXPORTER_PORT, serves there, says when a change will show, reloads on SIGHUP and stops on SIGTERM', async () => {
    const [simPort, exporterPort] = [await freePort(), await freePort()];
    const child = spawn(process.execPath, ['--import', 'tsx', DEMO, '--no-prometheus'], {
      env: { ...process.env, DEMO_SIMULATOR_PORT: String(simPort), DEMO_EXPORTER_PORT: String(exporterPort) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let stdout = '';
    child.stdout.on('data', (c: Buffer) => ((out += c.toString('utf8')), (stdout += c.toString('utf8'))));
    child.stderr.on('data', (c: Buffer) => (out += c.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      // Until the banner's last line is out (not a pause after its first: the rest may come later).
      const gone = () => (child.exitCode === null ? undefined : `the demo exited (${child.exitCode}):\n${out.slice(-4000)}`);
      await waitFor("the banner's last line", () => out.includes('backfill --config config/demo.yaml'), { gone });
      expect(out).toContain(`status page      http://127.0.0.1:${exporterPort}/`);
      expect(out).toContain(`CMDB simulator   http://127.0.0.1:${simPort}`);
      // Patterns over several lines on one stream (the banner's, stdout): never across the two.
      expect(stdout).toMatch(/connector history is polled every 30s,\s+the license every 60s/);
      expect(out).toContain(`kill -HUP ${child.pid} reloads config/demo.yaml`);
      expect((await fetch(`http://127.0.0.1:${exporterPort}/healthz`)).status).toBe(200);
      // Every link it prints answers (the simulator's is its state: its root is the CMDB API's, 404).
      const banner = demoBanner(stdout);
      expect(bannerLinks(banner), banner).toEqual([
        `http://127.0.0.1:${exporterPort}/`,
        `http://127.0.0.1:${exporterPort}/metrics`,
        `http://127.0.0.1:${exporterPort}/readyz`,
        `http://127.0.0.1:${simPort}/_admin/state`,
      ]);
      expect(await deadLinks(bannerLinks(banner)), banner).toEqual([]);

      // The first line is a short log line, not the effective configuration (that is logged at debug).
      const first = stdout.split('\n')[0] ?? '';
      expect(first).toMatch(/INFO\s+cmdb-exporter starting version=\S+ stacks=1$/);
      expect(stdout).not.toContain('"stacks":[{');
      // The banner names what fails by itself later, not only what fails from the start.
      expect(stdout).toMatch(/More come by themselves: [^]*about 1 ingestion run in 10 and 1 Action job in 7 fail[^]*The status page shows them as they happen\./);
      // Every Action whose newest job failed when the banner was printed is in it: the banner waited
      // for the Action jobs, which are read after the lists.
      const metrics = await (await fetch(`http://127.0.0.1:${exporterPort}/metrics`)).text();
      const failedActions = [...metrics.matchAll(/^cmdb_action_last_job_status\{[^}]*status="(?!(?:success)")[^"]*"\} 1$/gim)].length;
      const jobsRead = new Set([...metrics.matchAll(/^cmdb_action_last_job_status\{[^}]*action_id="([^"]+)"/gm)].map((m) => m[1]));
      const actions = new Set([...metrics.matchAll(/^cmdb_action_info\{[^}]*action_id="([^"]+)"/gm)].map((m) => m[1]));
      expect(actions.size).toBeGreaterThan(0);
      expect(jobsRead).toEqual(actions);
      expect(out.match(/^ {2}warning {2}action /gm) ?? []).toHaveLength(failedActions);

      // SIGHUP reloads the exporter's configuration as the daemon does; the demo runs on.
      child.kill('SIGHUP');
      await waitFor('the reload line', () => out.includes('SIGHUP: '), { gone });
      expect(out).toContain('SIGHUP: reloaded config/demo.yaml (configuration reloaded: {"unchanged":1');
      expect(child.exitCode).toBeNull();
      expect((await fetch(`http://127.0.0.1:${exporterPort}/healthz`)).status).toBe(200);

      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(out).toContain('SIGTERM: stopping the exporter, the simulator and what the demo started');
      await expect(fetch(`http://127.0.0.1:${exporterPort}/healthz`)).rejects.toThrow();
    } finally {
      if (child.exitCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
    }
  });
});

describe("the demo's copy of the rules", () => {
  it('cuts every for: and points every runbook_url at the runbooks the demo exporter serves, at a heading that exists there', () => {
    const base = 'http://127.0.0.1:9873/docs/alerts';
    const served = new DocsPages().page('alerts') ?? '';
    let alerts = 0;
    for (const text of demoRuleFiles(DEMO_FOR_SECONDS, base).values()) {
      const doc = parse(text) as { groups: Array<{ rules: Array<{ alert?: string; for?: string; annotations?: Record<string, string> }> }> };
      for (const rule of doc.groups.flatMap((g) => g.rules)) {
        if (!rule.alert) continue;
        alerts++;
        expect(rule.annotations?.runbook_url, rule.alert).toBe(`${base}#${rule.alert.toLowerCase()}`);
        expect(served, rule.alert).toContain(`id="${rule.alert.toLowerCase()}"`);
        if (rule.for !== undefined) expect(durationSeconds(rule.for)).toBeLessThanOrEqual(DEMO_FOR_SECONDS);
      }
    }
    expect(alerts).toBeGreaterThan(20);
    // The shipped files keep their own base: the demo only changes its temporary copy.
    const shipped = readFileSync(new URL('../config/prometheus/cmdb-alerts.yml', import.meta.url), 'utf8');
    expect(shipped).not.toContain(base);
    expect(shipped).toMatch(/runbook_url: https:\/\/github\.com\/\S+\/docs\/alerts\.md#cmdbconnectorerror/);
  });
});

describe("the links to the demo's Prometheus", () => {
  /** A stand-in answering `pages` (path to HTML) and 404 elsewhere; the real Prometheus builds are in test/e2e/demo-alert.test.ts. */
  async function withServer(pages: Record<string, string>, check: (url: string) => Promise<void>): Promise<void> {
    const server = createServer((req, res) => {
      const page = pages[req.url ?? ''];
      res.writeHead(page === undefined ? 404 : 200, { 'content-type': 'text/html' }).end(page ?? 'not found');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      await check(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  }

  it('links the web UI where it serves one: upstream at /alerts, Debian 2.x under /classic/', async () => {
    const app = '<!doctype html><title>Prometheus</title><script src="app.js"></script>';
    await withServer({ '/alerts': app }, async (url) => {
      const pages = await prometheusPages(url);
      expect([pages.ui, pages.home, pages.alerts]).toEqual([true, url, `${url}/alerts`]);
      expect(pages.graph('rate(x[5m])', '2w', 'unused')).toBe(`${url}/graph?g0.expr=rate%28x%5B5m%5D%29&g0.range_input=2w`);
    });
    await withServer({ '/classic/alerts': app }, async (url) => {
      const pages = await prometheusPages(url);
      expect([pages.ui, pages.alerts]).toEqual([true, `${url}/classic/alerts`]);
    });
  });

  it("links the HTTP API where no UI answers (Debian's Prometheus 3), a page without a script being no UI", async () => {
    await withServer({ '/alerts': '<p>The Debian package does not include a web application.</p>' }, async (url) => {
      const pages = await prometheusPages(url);
      expect([pages.ui, pages.home, pages.alerts]).toEqual([false, `${url}/api/v1/targets`, `${url}/api/v1/alerts`]);
      // Parentheses escaped too, so that a terminal keeps the whole link.
      expect(pages.graph('unused', '2w', 'count(x[2w])')).toBe(`${url}/api/v1/query?query=count%28x%5B2w%5D%29`);
    });
  });
});
