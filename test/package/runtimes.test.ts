/** The supported Node.js versions are stated in four places; they must agree. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { STANDS_FOR } from '../image/harness/base.js';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

describe('supported Node.js versions', () => {
  const engines = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node;
  const minimum = /^>=(\d+)\.(\d+)$/.exec(engines);

  it('engines, .nvmrc, the Dockerfile, CI and the README agree: 20.18+ supported, 20 and 24 tested', () => {
    expect(minimum?.[1]).toBe('20');
    const nvmrc = Number(read('.nvmrc').trim());
    expect(nvmrc).toBeGreaterThanOrEqual(Number(minimum?.[1]));
    expect(read('Dockerfile')).toMatch(new RegExp(`^ARG NODE_IMAGE=node:${nvmrc}-`, 'm'));
    expect(read('.ci/run')).toContain(`node@${nvmrc}`);
    expect(read('README.md')).toContain('Node.js 20 and 24');
  });

  it("the base `npm run test:image` makes stands for the Dockerfile's default base: the same Node.js line and Debian release", () => {
    expect(read('Dockerfile')).toMatch(new RegExp(`^ARG NODE_IMAGE=${STANDS_FOR}$`, 'm'));
    expect(STANDS_FOR).toMatch(new RegExp(`^node:${read('.nvmrc').trim()}-`));
  });

  it('this test runs on a supported version', () => {
    const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
    expect(major > 20 || (major === 20 && minor >= 18)).toBe(true);
  });
});
