/** Every problem in one round: checks across keys run even when a section has other problems. */
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
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

  // A missing required key (baseUrl mistyped as baseURL) once hid every check across keys and
  // every file check of that stack until the next round.
  it('reports a mistyped required key together with timeouts out of order and an unreadable caFile', () => {
    const yaml =
      'stacks:\n  - { name: prod, baseURL: "https://cmdb.example.com", token: tok-prod-1234, ' +
      'connectTimeoutSeconds: 40, timeoutSeconds: 20, tls: { caFile: /nonexistent/ca.pem } }\n';
    const issues = issuesOf(() => loadYaml(scratch, yaml));
    expect(issues.map((i) => i.path).sort()).toEqual(['stacks[0].baseURL', 'stacks[0].baseUrl', 'stacks[0].timeoutSeconds', 'stacks[0].tls.caFile']);
    expect(issues.find((i) => i.path === 'stacks[0].baseURL')?.message).toContain('did you mean "baseUrl"');
  });

  it('reports a missing name and an unreadable secretFile of the same stack together', () => {
    const yaml = 'stacks:\n  - { baseUrl: "https://cmdb.example.com", clientId: exporter, secretFile: /nonexistent/secret }\n';
    expect(issuesOf(() => loadYaml(scratch, yaml)).map((i) => i.path).sort()).toEqual(['stacks[0].name', 'stacks[0].secretFile']);
  });

  // A problem inside a list item (a saved query that is not a mapping) once left a hole in the
  // list for the second round, and the query check read undefined: a TypeError, not a ConfigError.
  it('reports a saved query that is not a mapping together with timeouts out of order', () => {
    const q = '{ name: a, table: asset, query: [[{ searchFieldName: OS, operator: "==", value: Linux }]] }';
    const yaml = `stacks:\n  - ${stackYaml(`connectTimeoutSeconds: 40, timeoutSeconds: 20, queries: [null, ${q}]`)}\n`;
    const issues = issuesOf(() => loadYaml(scratch, yaml));
    expect(issues.map((i) => i.path).sort()).toEqual(['stacks[0].queries[0]', 'stacks[0].timeoutSeconds']);
    expect(issues.find((i) => i.path === 'stacks[0].queries[0]')?.message).toContain('must be a mapping with name, table, query');
  });

  it('reports a bad CMDB_* value together with an unreadable CMDB_CA_FILE', () => {
    const env = { CMDB_BASE_URL: 'https://cmdb.example.com', CMDB_TOKEN: 'tok-env-1234', CMDB_TIMEZONE: 'Mars/Olympus', CMDB_CA_FILE: '/nonexistent/ca.pem' };
    expect(issuesOf(() => loadConfig({ env })).map((i) => i.path).sort()).toEqual(['CMDB_CA_FILE', 'CMDB_TIMEZONE']);
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
