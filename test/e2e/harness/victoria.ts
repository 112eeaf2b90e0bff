/**
 * A real VictoriaMetrics (the Debian package's `victoria-metrics`) on a loopback port with a
 * temporary storage directory and a retention long enough for any backfill: remote write at
 * /api/v1/write, the Prometheus query API at /api/v1/query. Of the parts' tier CMDB_PARTS_TIER
 * names, or of the `tier` given (a test that writes into 1.145 and 1.79 alike); with `scrape`, a
 * Prometheus scrape configuration it scrapes itself (-promscrape.config), as a VictoriaMetrics
 * without a Prometheus in front does.
 */
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { stringify } from 'yaml';
import { part, type Tier } from '../../../scripts/parts/index.js';
import { startProcess, type ManagedProcess } from './processes.js';
import { done, notYet, StopWaiting, waitFor } from '../../helpers/wait.js';
import { baseEnv, http, onFreePort } from './tools.js';

export interface RunningVictoria {
  readonly proc: ManagedProcess;
  /** http://127.0.0.1:PORT */
  readonly url: string;
}

export async function startVictoria(dir: string, opts: { tier?: Tier; scrape?: Readonly<Record<string, unknown>> } = {}): Promise<RunningVictoria> {
  const bin = opts.tier ? part('victoria-metrics', opts.tier) : part('victoria-metrics');
  const name = opts.tier ? `victoria-${opts.tier}` : 'victoria';
  const scrape = opts.scrape ? join(dir, `${name}-scrape.yml`) : undefined;
  if (scrape) writeFileSync(scrape, stringify(opts.scrape));
  return onFreePort(async (port) => {
    const args = [`-storageDataPath=${join(dir, name)}`, `-httpListenAddr=127.0.0.1:${port}`, '-retentionPeriod=100y', '-loggerLevel=ERROR', ...(scrape ? [`-promscrape.config=${scrape}`] : [])];
    const proc = startProcess(opts.tier ? `victoria-metrics-${opts.tier}` : 'victoria-metrics', bin, args, {
      cwd: dir,
      env: baseEnv(),
    });
    const url = `http://127.0.0.1:${port}`;
    await waitFor(
      'VictoriaMetrics /health',
      async () => {
        if (proc.hasExited) throw new StopWaiting(`victoria-metrics exited\n${proc.tail()}`);
        const r = await http(`${url}/health`, { timeoutMs: 2000 });
        return r.status === 200 ? done(undefined) : notYet(`${r.status} ${r.text}`);
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    return { proc, url };
  });
}
