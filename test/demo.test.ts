/** `npm run demo` on ports of the user's choosing, saying when a scenario's change will show; SIGHUP reloads it. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { freePort, WAIT_MS } from './helpers/daemon.js';

const DEMO = fileURLToPath(new URL('../scripts/demo.ts', import.meta.url));

/** Polls `check` every 100 ms until it holds or `ms` pass. */
async function until(check: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
}

describe('npm run demo', () => {
  it('takes DEMO_SIMULATOR_PORT and DEMO_EXPORTER_PORT, serves there, says when a change will show, reloads on SIGHUP and stops on SIGTERM', async () => {
    const [simPort, exporterPort] = [await freePort(), await freePort()];
    const child = spawn(process.execPath, ['--import', 'tsx', DEMO, '--no-prometheus'], {
      env: { ...process.env, DEMO_SIMULATOR_PORT: String(simPort), DEMO_EXPORTER_PORT: String(exporterPort) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (out += c.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      // Until the banner's last line is out (not a pause after its first: the rest may come later).
      await until(() => out.includes('backfill --config config/demo.yaml') || child.exitCode !== null, WAIT_MS);
      expect(out).toContain(`status page      http://127.0.0.1:${exporterPort}/`);
      expect(out).toContain(`CMDB simulator   http://127.0.0.1:${simPort}`);
      expect(out).toMatch(/connector history is polled every 30s,\s+the license every 60s/);
      expect(out).toContain(`kill -HUP ${child.pid} reloads config/demo.yaml`);
      expect((await fetch(`http://127.0.0.1:${exporterPort}/healthz`)).status).toBe(200);

      // SIGHUP reloads the exporter's configuration as the daemon does; the demo runs on.
      child.kill('SIGHUP');
      await until(() => out.includes('SIGHUP: ') || child.exitCode !== null, WAIT_MS);
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
