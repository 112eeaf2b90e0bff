/** scripts/test-rules.sh without promtool must fail with the install hint, not a bash error. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const script = fileURLToPath(new URL('../../scripts/test-rules.sh', import.meta.url));
const bin = mkdtempSync(join(tmpdir(), 'no-promtool-'));
afterAll(() => rmSync(bin, { recursive: true, force: true }));

describe('scripts/test-rules.sh', () => {
  it('fails with an install hint when promtool is not on PATH', () => {
    // A PATH holding only what the script needs before it looks for promtool.
    symlinkSync(spawnSync('bash', ['-c', 'command -v dirname'], { encoding: 'utf8' }).stdout.trim(), join(bin, 'dirname'));
    const run = spawnSync('/bin/bash', [script], { encoding: 'utf8', env: { PATH: bin }, timeout: 10_000 });
    expect(run.status).toBe(127);
    expect(run.stderr).toContain('promtool not found');
    expect(run.stderr).toContain('apt-get update && apt-get install -y prometheus');
  });
});
