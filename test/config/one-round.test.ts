/** Every problem in one round: checks across keys run even when a section has other problems. */
import { afterAll, describe, expect, it } from 'vitest';
import { issuesOf, loadYaml, Scratch, stackYaml } from './helpers.js';

const scratch = new Scratch();
afterAll(() => scratch.remove());

describe('one round of validation', () => {
  it('reports an unknown key, timeouts out of order and a missing caFile together', () => {
    const yaml = `stacks:\n  - ${stackYaml('timeoutz: 3, connectTimeoutSeconds: 40, timeoutSeconds: 20, tls: { caFile: /nonexistent/ca.pem }')}\n`;
    const paths = issuesOf(() => loadYaml(scratch, yaml)).map((i) => i.path);
    expect(paths).toEqual(expect.arrayContaining(['stacks[0].timeoutz', 'stacks[0].timeoutSeconds', 'stacks[0].tls.caFile']));
    expect(paths).toHaveLength(3);
  });

  it('reports problems of defaults and of the merge with them in one round', () => {
    const yaml = `defaults:\n  retriez: 2\n  timeoutSeconds: 5\nstacks:\n  - ${stackYaml('connectTimeoutSeconds: 10')}\n`;
    const paths = issuesOf(() => loadYaml(scratch, yaml)).map((i) => i.path);
    expect(paths).toEqual(expect.arrayContaining(['defaults.retriez']));
    expect(paths.some((p) => p.endsWith('TimeoutSeconds') || p.endsWith('timeoutSeconds'))).toBe(true);
  });

  it('does not add an ordering complaint about a value that is itself invalid', () => {
    const yaml = `stacks:\n  - ${stackYaml('connectTimeoutSeconds: 40, timeoutSeconds: soon')}\n`;
    const issues = issuesOf(() => loadYaml(scratch, yaml));
    expect(issues.map((i) => i.path)).toEqual(['stacks[0].timeoutSeconds']);
  });
});

describe('YAML anchors', () => {
  it('accepts and ignores top-level keys starting with x-', () => {
    const yaml = `x-common: &common\n  timeoutSeconds: 45\nstacks:\n  - { name: a, baseUrl: "https://a.example.com", token: tok-a-1234, <<: *common }\n`;
    const config = loadYaml(scratch, yaml);
    expect(config.stacks[0]?.timeoutSeconds).toBe(45);
  });
});
