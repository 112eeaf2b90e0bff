/** `npm run demo` on ports of the user's choosing, saying when a scenario's change will show. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { freePort, WAIT_MS } from './helpers/daemon.js';

const DEMO = fileURLToPath(new URL('../scripts/demo.ts', import.meta.url));

describe('npm run demo', () => {
  it('takes DEMO_SIMULATOR_PORT and DEMO_EXPORTER_PORT, serves there, and says when a change will show', async () => {
    const [simPort, exporterPort] = [await freePort(), await freePort()];
    const child = spawn(process.execPath, ['--import', 'tsx', DEMO, '--no-prometheus'], {
      env: { ...process.env, DEMO_SIMULATOR_PORT: String(simPort), DEMO_EXPORTER_PORT: String(exporterPort) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (out += c.toString('utf8')));
    try {
      // Until the banner's last line is out (not a pause after its first: the rest may come later).
      const complete = () => out.includes('status page') && /connector history is polled every 30s,\s+the license every 60s/.test(out);
      const deadline = Date.now() + WAIT_MS;
      while (!complete() && child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(out).toContain(`status page      http://127.0.0.1:${exporterPort}/`);
      expect(out).toContain(`CMDB simulator   http://127.0.0.1:${simPort}`);
      expect(out).toMatch(/connector history is polled every 30s,\s+the license every 60s/);
      expect((await fetch(`http://127.0.0.1:${exporterPort}/healthz`)).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  });
});
