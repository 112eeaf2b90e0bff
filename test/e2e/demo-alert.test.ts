/**
 * The newcomer's path to an alert: `npm run demo` with `prometheus` on PATH starts a real Prometheus
 * with the shipped rules (for: shortened, in a temporary copy), prints its alerts page and a "break a
 * connector" command; running that command as printed makes CmdbConnectorError fire for that
 * connector within minutes, and the connector stays broken until it has.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startProcess, stopAll, type ManagedProcess } from './harness/processes.js';
import { PrometheusApi } from './harness/prometheus.js';
import { baseEnv, http, REPO_ROOT, requireExecutable } from './harness/tools.js';
import { done, notYet, waitFor } from './harness/wait.js';

const SHIPPED = ['config/prometheus/cmdb-alerts.yml', 'config/prometheus/cmdb-rules.yml'];
/** The bound: the alert fires within about 5 minutes of the printed command. */
const FIRE_WITHIN_MS = 5 * 60_000;

let demo: ManagedProcess | undefined;

afterAll(async () => {
  await stopAll();
});

/** The printed curl command: its URL and its -d body. */
function parseCurl(line: string): { url: string; body: string } {
  const m = /curl -X POST (\S+) -H 'content-type: application\/json' -d '([^']*)'/.exec(line);
  if (!m) throw new Error(`not the demo's curl command: ${line}`);
  return { url: m[1] ?? '', body: m[2] ?? '' };
}

describe('npm run demo with Prometheus on PATH', () => {
  it('prints the alerts page and a break command after which CmdbConnectorError fires for that connector', async () => {
    requireExecutable('prometheus');
    const shippedBefore = SHIPPED.map((f) => readFileSync(join(REPO_ROOT, f), 'utf8'));
    demo = startProcess('demo', process.execPath, ['--import', 'tsx', 'scripts/demo.ts'], {
      cwd: REPO_ROOT,
      env: baseEnv({ DEMO_SIMULATOR_PORT: '0', DEMO_EXPORTER_PORT: '0', DEMO_PROMETHEUS_PORT: '0' }),
    });
    await demo.waitForLine('the demo\'s "Heal it at once" line', (l) => l.startsWith('Heal it at once'), 120_000);
    const out = demo.lines('stdout');
    const at = (prefix: string) => out.find((l) => l.trimStart().startsWith(prefix)) ?? '';

    const alertsUrl = /alerts\s+(http:\/\/127\.0\.0\.1:\d+\/(?:classic\/)?alerts)/.exec(at('alerts '))?.[1];
    expect(alertsUrl, demo.tail()).toBeDefined();
    const api = new PrometheusApi(new URL(alertsUrl ?? '').origin);
    expect((await http(alertsUrl ?? '')).status).toBe(200);

    // The demo names the problems the simulated data has on purpose.
    expect(demo.output()).toMatch(/Problems there by design[^\n]*\n\s+warning\s+connector \S+/);

    const breakIndex = out.findIndex((l) => l.startsWith('Break a connector'));
    expect(out[breakIndex], demo.tail()).toMatch(/stays broken for \d+ minutes/);
    const command = parseCurl(out[breakIndex + 1] ?? '');
    const victim = (JSON.parse(command.body) as { bridgeName: string }).bridgeName;
    // It says how long the alert takes.
    const promised = /fires within about (\d+) minutes \((\d+)s at most\)/.exec(out[breakIndex + 2] ?? '');
    expect(promised, out.slice(breakIndex, breakIndex + 6).join('\n')).not.toBeNull();
    expect(Number(promised?.[2])).toBeLessThanOrEqual(FIRE_WITHIN_MS / 1000);

    // Prometheus scrapes the demo's exporter under the job the shipped rules select.
    await waitFor(
      'the exporter scraped as job cmdb-exporter',
      async () => {
        const up = await api.query('up{job="cmdb-exporter"} == 1');
        return up.length === 1 ? done(undefined) : notYet(up);
      },
      { timeoutMs: 30_000, intervalMs: 1000 },
    );
    const forVictim = async () => (await api.alerts()).filter((a) => a.labels.alertname === 'CmdbConnectorError' && a.labels.connector === victim);
    expect(await forVictim(), 'the connector to break is healthy before the command').toEqual([]);

    // Run the printed command as printed.
    const started = Date.now();
    const reply = await fetch(command.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: command.body });
    expect(reply.status, await reply.text()).toBe(200);

    const states: string[] = [];
    const firing = await waitFor(
      `CmdbConnectorError firing for ${victim}`,
      async () => {
        const alerts = await forVictim();
        for (const a of alerts) if (!states.includes(a.state)) states.push(a.state);
        const fired = alerts.find((a) => a.state === 'firing');
        return fired ? done(fired) : notYet(alerts);
      },
      { timeoutMs: FIRE_WITHIN_MS, intervalMs: 2000 },
    );
    const seconds = Math.round((Date.now() - started) / 1000);
    console.log(`CmdbConnectorError fired for ${victim} ${seconds}s after the break command (the demo promised ${promised?.[2]}s at most)`);
    expect(firing.labels.severity).toBe('warning');
    // It went through pending (the shortened for:), as the demo says.
    expect(states[0]).toBe('pending');

    // The shipped rule files are untouched: the demo's shortened copy lives in a temporary directory.
    expect(SHIPPED.map((f) => readFileSync(join(REPO_ROOT, f), 'utf8'))).toEqual(shippedBefore);

    const stopped = await demo.stop(15_000);
    expect(stopped.killed).toBe(false);
    await expect(http(`${api.url}/-/ready`, { timeoutMs: 2000 })).rejects.toThrow();
  }, 8 * 60_000);
});
