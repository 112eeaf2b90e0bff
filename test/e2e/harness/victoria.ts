/**
 * A real VictoriaMetrics (the Debian package's `victoria-metrics`) on a loopback port with a
 * temporary storage directory and a retention long enough for any backfill: remote write at
 * /api/v1/write, the Prometheus query API at /api/v1/query.
 */
import { join } from 'node:path';
import { startProcess, type ManagedProcess } from './processes.js';
import { done, notYet, StopWaiting, waitFor } from './wait.js';
import { baseEnv, http, onFreePort, requirePart } from './tools.js';

export interface RunningVictoria {
  readonly proc: ManagedProcess;
  /** http://127.0.0.1:PORT */
  readonly url: string;
}

export async function startVictoria(dir: string): Promise<RunningVictoria> {
  const bin = requirePart('victoria-metrics');
  return onFreePort(async (port) => {
    const proc = startProcess('victoria-metrics', bin, [`-storageDataPath=${join(dir, 'victoria')}`, `-httpListenAddr=127.0.0.1:${port}`, '-retentionPeriod=100y', '-loggerLevel=ERROR'], {
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
