/**
 * Sharding with real processes: three daemons (--shard 0..2 --total-shards 3) against one simulator,
 * with a configuration of many stacks. The union of their /metrics must cover every stack exactly
 * once, before and after a SIGHUP reload that adds stacks.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { freePort, runDaemon, type Daemon } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = 'shard-secret-Q7x2Lm';
const TOTAL = 3;
let sim: SimulatorServer;
let tmp: string;
const running: Daemon[] = [];

function configYaml(stacks: number): string {
  const lines = [
    'defaults:',
    '  rateLimitPerMinute: 6000',
    'stacks:',
  ];
  for (let i = 0; i < stacks; i++) {
    lines.push(`  - name: stack-${String(i).padStart(2, '0')}`, `    baseUrl: ${sim.url}`);
    lines.push(`    clientId: ${sim.clientId}`, `    secretFile: ${join(tmp, 'secret')}`);
  }
  return `${lines.join('\n')}\n`;
}

beforeAll(async () => {
  sim = await startSimulator({ seed: 11, secret: SECRET });
  tmp = mkdtempSync(join(tmpdir(), 'cmdb-shard-'));
  writeFileSync(join(tmp, 'secret'), `${SECRET}\n`);
});

afterAll(async () => {
  await Promise.all(running.splice(0).map((d) => d.stop('SIGKILL')));
  await sim?.close();
  rmSync(tmp, { recursive: true, force: true });
});

/** stack label → how often it appears as cmdb_endpoint_up{endpoint="license"} (one per polling replica). */
function stacksIn(metrics: string): string[] {
  return [...metrics.matchAll(/^cmdb_endpoint_up\{stack="([^"]+)",endpoint="license"\} /gm)].map((m) => m[1] ?? '');
}

async function scrapeAll(bases: readonly string[]): Promise<string[]> {
  return Promise.all(bases.map(async (b) => (await fetch(`${b}/metrics`)).text()));
}

describe('three sharded replicas', () => {
  it('poll every stack exactly once between them, also after a reload adds stacks', async () => {
    const file = join(tmp, 'exporter.yaml');
    writeFileSync(file, configYaml(24));
    const ports = await Promise.all(Array.from({ length: TOTAL }, () => freePort()));
    const bases = ports.map((p) => `http://127.0.0.1:${p}`);
    for (let shard = 0; shard < TOTAL; shard++) {
      const args = ['--config', file, '--shard', String(shard), '--total-shards', String(TOTAL)];
      running.push(runDaemon(args, { EXPORTER_LISTEN_ADDRESS: `127.0.0.1:${ports[shard]}`, LOG_LEVEL: 'info' }));
    }
    for (const [i, b] of bases.entries()) await waitFor(`${b}/readyz`, async () => ((await fetch(`${b}/readyz`)).status === 200 ? true : undefined), { gone: running[i]?.gone });

    const first = await scrapeAll(bases);
    const owned = first.map(stacksIn);
    const union = owned.flat().sort();
    expect(union).toEqual(Array.from({ length: 24 }, (_, i) => `stack-${String(i).padStart(2, '0')}`));
    for (let shard = 0; shard < TOTAL; shard++) {
      const text = first[shard] ?? '';
      expect(text).toContain(`cmdb_exporter_shard{shard="${shard}",total="${TOTAL}"} 1`);
      expect(text).toContain(`cmdb_exporter_stacks ${owned[shard]?.length}`);
      // Each replica polls a real share, not everything and not nothing (24 stacks over 3).
      expect(owned[shard]?.length).toBeGreaterThan(2);
      expect(owned[shard]?.length).toBeLessThan(16);
    }

    // SIGHUP re-reads the file through the sharded loader: the six new stacks are split too.
    writeFileSync(file, configYaml(30));
    for (const d of running) d.child.kill('SIGHUP');
    const after = await waitFor('the reload to reach every replica', async () => {
        const texts = await scrapeAll(bases);
        const counts = texts.map((t) => Number(/^cmdb_exporter_stacks (\d+)$/m.exec(t)?.[1] ?? 'NaN'));
        return counts.reduce((a, b) => a + b, 0) === 30 ? texts : undefined;
      });
    await Promise.all(bases.map((b, i) => waitFor(`${b}/readyz after reload`, async () => ((await fetch(`${b}/readyz`)).status === 200 ? true : undefined), { gone: running[i]?.gone })));
    const reloaded = (await scrapeAll(bases)).map(stacksIn);
    expect(after).toHaveLength(TOTAL);
    expect(reloaded.flat().sort()).toEqual(Array.from({ length: 30 }, (_, i) => `stack-${String(i).padStart(2, '0')}`));
    // Adding stacks moved none of the old ones: each keeps its replica.
    for (let shard = 0; shard < TOTAL; shard++) {
      for (const name of owned[shard] ?? []) expect(reloaded[shard]).toContain(name);
    }
    for (const d of running) expect(d.output()).not.toContain(SECRET);
  }, 300_000);

  it('a bad shard flag stops start-up with exit code 2 naming the flag', async () => {
    const d = runDaemon(['--shard', '3', '--total-shards', '3', '--check-config'], { CMDB_BASE_URL: sim.url, CMDB_CLIENT_ID: 'x', CMDB_SECRET: 'y' });
    expect(await d.exited).toBe(2);
    expect(d.output()).toContain('--shard: must be below --total-shards (3), got 3');
  });

  it('--check-config names the stacks of this shard', async () => {
    const file = join(tmp, 'check.yaml');
    writeFileSync(file, configYaml(6));
    const d = runDaemon(['--config', file, '--check-config', '--shard-from-pod-name', '--total-shards', '2'], { POD_NAME: 'cmdb-exporter-1' });
    expect(await d.exited).toBe(0);
    expect(d.output()).toMatch(/shard 1 of 2 \(from pod name\) polls \d+: stack-/);
  });
});
