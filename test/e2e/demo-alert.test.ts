/**
 * The newcomer's path to an alert: `npm run demo` starts a real Prometheus (the pinned part) with the
 * shipped rules (for: shortened, in a temporary copy) and a real Alertmanager with the shipped routing
 * and inhibition, prints links that all answer (Prometheus' alerts among them: its web UI's page, or
 * its API's where it serves no UI) and a "break a connector" command; running that command as printed makes CmdbConnectorError fire for that
 * connector within minutes, the connector stays broken until it has, and the demo prints the one
 * notification Alertmanager sends for it, whose runbook link opens the runbook the demo's exporter
 * serves. SIGHUP reloads the demo without stopping anything; SIGTERM
 * and SIGINT stop it, and no child (Prometheus, Alertmanager) is left behind.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startProcess, stopAll, type ManagedProcess } from './harness/processes.js';
import { PrometheusApi } from './harness/prometheus.js';
import { existsSync } from 'node:fs';
import { bannerLinks, deadLinks, demoBanner } from '../helpers/banner-links.js';
import { baseEnv, http, REPO_ROOT, requirePart } from './harness/tools.js';
import { done, notYet, waitFor } from '../helpers/wait.js';

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

describe('npm run demo with the pinned Prometheus and Alertmanager', () => {
  it('prints links that all answer, the alerts among them, and a break command after which CmdbConnectorError fires for that connector', async () => {
    requirePart('prometheus');
    requirePart('alertmanager');
    const shippedBefore = SHIPPED.map((f) => readFileSync(join(REPO_ROOT, f), 'utf8'));
    demo = startProcess('demo', process.execPath, ['--import', 'tsx', 'scripts/demo.ts'], {
      cwd: REPO_ROOT,
      env: baseEnv({ DEMO_SIMULATOR_PORT: '0', DEMO_EXPORTER_PORT: '0', DEMO_PROMETHEUS_PORT: '0', DEMO_ALERTMANAGER_PORT: '0' }),
    });
    // The banner's last line: the link to look at the backfilled history with.
    await demo.waitForLine("the banner's last line", (l) => l.startsWith('  then http'), 120_000);
    const out = demo.lines('stdout');
    const at = (prefix: string) => out.find((l) => l.trimStart().startsWith(prefix)) ?? '';

    const alertsUrl = /^alerts\s+(http:\/\/127\.0\.0\.1:\d+\/\S+)$/.exec(at('alerts ').trim())?.[1] ?? '';
    expect(alertsUrl, demo.tail()).not.toBe('');
    const alertmanagerUrl = /Alertmanager\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(at('Alertmanager '))?.[1] ?? '';
    const exporterUrl = /status page\s+(http:\/\/127\.0\.0\.1:\d+)\//.exec(at('status page '))?.[1] ?? '';
    expect(exporterUrl, demo.tail()).not.toBe('');
    expect(alertmanagerUrl, demo.tail()).not.toBe('');
    const api = new PrometheusApi(new URL(alertsUrl).origin);

    // Every link the banner prints answers, whichever Prometheus and Alertmanager these are: where
    // one serves no web UI (Debian's packages of the current versions ship none) the banner links
    // its HTTP API instead, and says so.
    const banner = demoBanner(out.join('\n'));
    const links = bannerLinks(banner);
    expect(links.length, banner).toBeGreaterThanOrEqual(8);
    expect(await deadLinks(links), banner).toEqual([]);
    const uiAlerts = [`${api.url}/alerts`, `${api.url}/classic/alerts`];
    const served = (await Promise.all(uiAlerts.map(async (u) => ((await http(u)).status === 200 ? u : undefined)))).find((u) => u !== undefined);
    expect(alertsUrl).toBe(served ?? `${api.url}/api/v1/alerts`);
    if (served === undefined) expect(banner).toContain('this Prometheus serves no web UI');

    // The demo names the problems the simulated data has on purpose.
    expect(demo.lines('stdout').join('\n')).toMatch(/Problems there by design[^\n]*\n\s+warning\s+connector \S+/);

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

    // Alertmanager sends one notification for it, and the demo prints it.
    const about = (l: string) => l.startsWith('notification ') && l.includes(`: connector ${victim} (`);
    const notified = await demo.waitForLine(`the notification for ${victim}`, about, 120_000);
    expect(notified).toMatch(new RegExp(`^notification \\d\\d:\\d\\d:\\d\\d UTC \\[WARNING\\] stack demo: connector ${victim} \\(receiver cmdb-warning; since .* UTC; \\d+ firing, 0 resolved\\)$`));
    // Every profile of the connector that fires is in it: the next group_interval has nothing to add.
    const firingProfiles = (await forVictim()).filter((a) => a.state === 'firing').length;
    expect(Number(/; (\d+) firing/.exec(notified)?.[1])).toBe(firingProfiles);
    // Its runbook link, as every notification's, is the runbook the demo's exporter serves, at the
    // alert's own heading (not the repository's copy the shipped rules link to).
    const runbook = `${exporterUrl}/docs/alerts#cmdbconnectorerror`;
    await demo.waitForLine("the notification's runbook link", (l) => l.trim() === `runbook: ${runbook}`, 30_000);
    const elsewhere = demo.lines('stdout').filter((l) => l.trimStart().startsWith('runbook: ') && !l.includes(`runbook: ${exporterUrl}/docs/alerts#`));
    expect(elsewhere).toEqual([]);
    const page = await http(`${exporterUrl}/docs/alerts`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('id="cmdbconnectorerror"');

    // SIGHUP reloads the demo's exporter; Prometheus and Alertmanager keep running.
    demo.signal('SIGHUP');
    await demo.waitForLine('the reload', (l) => l.startsWith('SIGHUP: reloaded config/demo.yaml'), 30_000);
    expect((await http(`${api.url}/-/ready`)).status).toBe(200);
    expect((await http(`${alertmanagerUrl}/-/ready`)).status).toBe(200);
    expect(demo.lines('stdout').filter(about), 'one notification for the broken connector').toHaveLength(1);

    // The shipped rule files are untouched: the demo's shortened copy lives in a temporary directory.
    expect(SHIPPED.map((f) => readFileSync(join(REPO_ROOT, f), 'utf8'))).toEqual(shippedBefore);

    const stopped = await demo.stop(15_000);
    expect(stopped.killed).toBe(false);
    await expect(http(`${api.url}/-/ready`, { timeoutMs: 2000 })).rejects.toThrow();
    await expect(http(`${alertmanagerUrl}/-/ready`, { timeoutMs: 2000 })).rejects.toThrow();
  }, 8 * 60_000);
});

describe('npm run demo stopped with Ctrl-C', () => {
  it('leaves no child behind: Prometheus and Alertmanager stop and their directories go', async () => {
    requirePart('prometheus');
    requirePart('alertmanager');
    const run = startProcess('demo-sigint', process.execPath, ['--import', 'tsx', 'scripts/demo.ts'], {
      cwd: REPO_ROOT,
      env: baseEnv({ DEMO_SIMULATOR_PORT: '0', DEMO_EXPORTER_PORT: '0', DEMO_PROMETHEUS_PORT: '0', DEMO_ALERTMANAGER_PORT: '0' }),
    });
    await run.waitForLine('the demo\'s "Heal it at once" line', (l) => l.startsWith('Heal it at once'), 120_000);
    const out = run.lines('stdout');
    const url = (name: string) => new RegExp(`^\\s*${name}\\s+(http://127\\.0\\.0\\.1:\\d+)`).exec(out.find((l) => l.trimStart().startsWith(`${name} `)) ?? '')?.[1] ?? '';
    const children = [url('Prometheus'), url('Alertmanager')];
    for (const u of children) expect((await http(`${u}/-/ready`)).status, u).toBe(200);
    // Where Prometheus keeps its copy of the rules and its data: the demo's temporary directory.
    const flags = JSON.parse((await http(`${children[0]}/api/v1/status/flags`)).text) as { data: Record<string, string> };
    const prometheusDir = (flags.data['config.file'] ?? '').replace(/\/prometheus\.yml$/, '');
    expect(prometheusDir).toMatch(/cmdb-exporter-demo-prometheus-/);
    expect(existsSync(prometheusDir)).toBe(true);
    run.signal('SIGINT');
    const exit = await run.exited;
    expect(exit.code).toBe(0);
    expect(run.output()).toContain('SIGINT: stopping the exporter, the simulator and what the demo started');
    for (const u of children) await expect(http(`${u}/-/ready`, { timeoutMs: 2000 }), u).rejects.toThrow();
    expect(existsSync(prometheusDir), prometheusDir).toBe(false);
  }, 4 * 60_000);
});
