import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { parse, stringify } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { GLOBAL_VARS, STACK_VARS } from '../../src/config/env.js';
import { loadConfig } from '../../src/config/load.js';
import { defaultsSchema, stackSchema, topSchema } from '../../src/config/schema.js';
import { loadYaml, Scratch, stackYaml } from './helpers.js';

const EXAMPLE = new URL('../../config/exporter.example.yaml', import.meta.url);
const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
const DOCS = new URL('../../docs/configuration.md', import.meta.url);
const exampleText = readFileSync(EXAMPLE, 'utf8');
const docsText = readFileSync(DOCS, 'utf8');

const scratch = new Scratch();
afterAll(() => scratch.remove());

/** Every key of a schema as a dotted path: 'retries.max', 'stacks[].name' is given as 'name'. */
function keysOf(schema: z.ZodType, prefix = ''): string[] {
  let s = schema;
  while (s instanceof z.ZodOptional) s = s.unwrap() as z.ZodType;
  if (!(s instanceof z.ZodObject)) return [];
  return Object.entries(s.shape as Record<string, z.ZodType>).flatMap(([key, child]) => {
    const path = prefix ? `${prefix}.${key}` : key;
    const nested = keysOf(child, path);
    return nested.length > 0 ? nested : [path];
  });
}

const TOP_KEYS = keysOf(topSchema);
const STACK_KEYS = keysOf(stackSchema);
const ENV_VARS = ['EXPORTER_CONFIG', ...Object.values(GLOBAL_VARS), ...STACK_VARS.map(([name]) => name)];

describe('config/exporter.example.yaml', () => {
  it('loads and validates with the environment variables it references', () => {
    const config = loadConfig({
      configFile: EXAMPLE.pathname,
      env: { CMDB_TOKEN_EU: 'example-eu-token', CMDB_PROD_SECRET: 'example-secret' },
    });
    expect(config.stacks.map((s) => [s.name, s.baseUrl, s.auth.kind])).toEqual([
      ['prod', 'https://cmdb.example.com', 'client'],
      ['eu', 'https://cmdb-eu.example.com', 'token'],
    ]);
    expect(config.stacks[0]?.auth).toMatchObject({ clientId: 'exporter-prod', secret: 'example-secret' });
    expect(config.stacks[1]?.auth).toEqual({ kind: 'token', token: 'example-eu-token' });
  });

  it('shows the built-in defaults: its `defaults` section changes nothing', () => {
    const defaults = (parse(exampleText) as { defaults: unknown }).defaults;
    const stack = `stacks:\n  - ${stackYaml()}\n`;
    const withExampleDefaults = loadYaml(scratch, `${stringify({ defaults })}${stack}`);
    const withBuiltIns = loadYaml(scratch, stack);
    expect(withExampleDefaults).toEqual(withBuiltIns);
  });

  it.each([...TOP_KEYS, ...STACK_KEYS].map((k) => [k]))('documents the key %s', (key) => {
    const leaf = key.split('.').pop() ?? key;
    expect(exampleText).toMatch(new RegExp(`(^|[\\s#{,])${leaf}:`, 'm'));
  });

  it('carries the worked saved queries, and the demo runs the same ones', () => {
    const example = (parse(exampleText) as { stacks: Array<{ queries?: unknown }> }).stacks[0]?.queries;
    const demo = (parse(readFileSync(new URL('../../config/demo.yaml', import.meta.url), 'utf8')) as { stacks: Array<{ queries?: unknown }> }).stacks[0]?.queries;
    expect((example as Array<{ name: string }>).map((q) => q.name)).toEqual(['servers-without-edr', 'assets-not-seen-30d', 'public-assets-open-ports', 'high-risk-users']);
    expect(demo).toEqual(example);
  });

  it('holds no literal secret or token, only ${VAR} references (falling back to the placeholder change-me)', () => {
    const values = exampleText
      .split('\n')
      .filter((line) => !line.trimStart().startsWith('#'))
      .flatMap((line) => [...line.matchAll(/\b(secret|token):\s*(\S+)/g)].map((m) => m[2]));
    expect(values.length).toBeGreaterThan(0);
    for (const v of values) expect(v).toMatch(/^\$\{[A-Z_]+(:-change-me)?\}$/);
  });

  it('passes --check-config as shipped, with nothing set: the documented defaults, warning that its CMDBs are examples', () => {
    const check = spawnSync(process.execPath, ['--import', 'tsx', MAIN, '--check-config', '--config', EXAMPLE.pathname], { env: { PATH: process.env.PATH ?? '' }, encoding: 'utf8', timeout: 30_000 });
    expect(check.stderr).toBe(
      "cmdb-exporter: warning: stack prod: baseUrl https://cmdb.example.com is an example address (example.com is reserved for documentation): no CMDB answers there; set your CMDB's address\n" +
        "cmdb-exporter: warning: stack eu: baseUrl https://cmdb-eu.example.com is an example address (example.com is reserved for documentation): no CMDB answers there; set your CMDB's address\n",
    );
    expect(check.stdout).toBe(
      'configuration OK: 2 stack(s) (prod, eu); listen :9873\n' +
        "saved queries OK without the CMDB: 4 (shape, operators, value kinds, relative days); field names and types are checked against each stack's field metadata before each run\n",
    );
    expect(check.status).toBe(0);
  });
});

describe('docs/configuration.md', () => {
  it.each([...TOP_KEYS, ...keysOf(defaultsSchema), 'name', 'baseUrl', 'clientId', 'secret', 'secretFile', 'token', 'tokenFile'].map((k) => [k]))(
    'has a row for the key %s',
    (key) => {
      expect(docsText).toContain(`| \`${key}\``);
    },
  );

  it.each(ENV_VARS.map((v) => [v]))('documents the environment variable %s', (name) => {
    expect(docsText).toContain(`\`${name}\``);
  });
});
