/** scripts/test-rules.sh with a promtool that cannot be had must stop naming the part, not run on with a bash error. */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const script = fileURLToPath(new URL('../../scripts/test-rules.sh', import.meta.url));

describe('scripts/test-rules.sh', () => {
  it('stops naming the variable when CMDB_PART_PROMTOOL names no executable', () => {
    const run = spawnSync('/bin/bash', [script], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH, CMDB_PART_PROMTOOL: '/nonexistent/promtool', CMDB_PARTS_TIERS: 'current' },
      timeout: 60_000,
    });
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain('CMDB_PART_PROMTOOL=/nonexistent/promtool is not an executable file');
    expect(run.stdout).not.toContain('== check rules');
  });
});
