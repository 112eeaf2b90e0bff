/**
 * Words a person can act on, from the backfill command in-process against a CMDB that accepts
 * connections and never answers:
 *
 * - the ETA knows the fail-fast rule: once requests time out, the progress line's ETA is when the
 *   rule stops the stack if they go on (and says so), not the remaining requests at the pace of the
 *   failing ones (before: "ETA 1h9m48s" after the first unit, while the rule stopped the stack
 *   after three, some 6.5 minutes at the default timeouts);
 * - the command to continue names the environment variables the run used, without their values.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runCommand } from '../helpers/backfill.js';

let dir: string;
let server: Server;
let url: string;
const sockets = new Set<Socket>();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cmdb-backfill-words-'));
  // Takes every connection, reads what it is sent, answers nothing.
  server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

describe('a CMDB that accepts connections and never answers', () => {
  it('the ETA is when the fail-fast rule stops the stack, and says why; the command to continue names the variables the run used', async () => {
    const config = join(dir, 'exporter.yaml');
    writeFileSync(
      config,
      // The URL and the token through ${VAR}s of the file, as a deployment would pass them.
      stringify({ stacks: [{ name: 'hang', baseUrl: '${HANG_URL}', token: '${HANG_TOKEN}', timeoutSeconds: 1, connectTimeoutSeconds: 1, backfillRequestsPerMinute: 6000, retries: { max: 0 } }] }),
    );
    const env = { PATH: '', HANG_URL: url, HANG_TOKEN: 'sekrit-token-value', LOG_LEVEL: 'error' };
    const r = await runCommand(['--config', config, '--from', '10d', '--out', join(dir, 'out'), '--instance', 'x:1'], env, true);
    const said = `exit ${r.code}\n${r.stdout}\n${r.stderr}`;
    expect(r.code, said).toBe(1);
    expect(r.stdout).toContain('stack hang: reading stopped early: 3 requests timed out in a row');
    // Drawn in place on a terminal: each drawing after a carriage return.
    const lines = r.stderr.split('\r\x1b[2K').filter((l) => l.startsWith('reading history'));
    const failing = lines.flatMap((l) => {
      const m = /ETA (\S+) \(stack hang stops reading within (\S+) unless its CMDB answers: requests timed out: (\d) in a row, 3 stop the reading\)/.exec(l);
      return m ? [{ eta: m[1], within: m[2], inARow: Number(m[3]) }] : [];
    });
    expect(failing.length, said).toBeGreaterThan(0);
    // The ETA is the rule's, not the pace of the failing requests times the 10 days left.
    for (const f of failing) expect(f.eta).toBe(f.within);
    expect(new Set(failing.map((f) => f.inARow))).toEqual(new Set([1, 2]));
    // Drawn with the step of the failing unit, never a step behind; then the rule's stop, said as such.
    expect(lines.some((l) => /^reading history \S+ \d+% 1\/\d+ requests, ETA \S+ \(stack hang stops reading within \S+ unless its CMDB answers: requests timed out: 1 in a row/.test(l)), said).toBe(true);
    expect(lines.some((l) => l.includes('(stack hang stopped reading: 3 requests timed out in a row')), said).toBe(true);

    expect(r.stdout).toContain(`to read what is missing: cmdb-exporter backfill --config ${config} --from 10d --out ${join(dir, 'out')} --instance x:1\n  (with HANG_TOKEN, HANG_URL and LOG_LEVEL set as for this run; their values are not shown)`);
    expect(said).not.toContain('sekrit-token-value');
  });
});
