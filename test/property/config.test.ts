/**
 * Property: the configuration loader either returns a configuration or throws a ConfigError —
 * never another error — whatever the YAML file, the objects in it and the environment hold.
 * Inputs: arbitrary text, arbitrary JSON-like objects as YAML, and the shipped example config
 * with mutations (test/property/bodies.ts), beside arbitrary values of every environment variable.
 *
 * PROPERTY_RUNS sets the runs (default 200; `npm run fuzz` runs 10,000); PROPERTY_SEED replays one.
 */
import { readFileSync } from 'node:fs';
import { fc, test } from '@fast-check/vitest';
import { afterAll, describe, expect } from 'vitest';
import { parse, stringify } from 'yaml';
import { loadConfig } from '../../src/config/load.js';
import { ConfigError } from '../../src/errors.js';
import { Scratch } from '../config/helpers.js';
import { hostileBody } from './bodies.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 200);
/** PROPERTY_SEED replays a failure that vitest printed (`with seed=…`). */
const SEED = process.env.PROPERTY_SEED === undefined ? {} : { seed: Number(process.env.PROPERTY_SEED) };
const scratch = new Scratch();
afterAll(() => scratch.remove());

const EXAMPLE = JSON.stringify(parse(readFileSync(new URL('../../config/exporter.example.yaml', import.meta.url), 'utf8')));
const ENV_NAMES = [
  'EXPORTER_LISTEN_ADDRESS',
  'LOG_LEVEL',
  'LOG_FORMAT',
  'CMDB_STACK',
  'CMDB_BASE_URL',
  'CMDB_CLIENT_ID',
  'CMDB_SECRET',
  'CMDB_SECRET_FILE',
  'CMDB_TOKEN',
  'CMDB_TOKEN_FILE',
  'CMDB_CLIENT_ID_KEY',
  'CMDB_USER_AGENT',
  'CMDB_RATE_LIMIT_PER_MINUTE',
  'CMDB_CA_FILE',
  'CMDB_INSECURE_SKIP_VERIFY',
  'CMDB_CONNECTOR_FULL_SCAN_INTERVAL',
  'CMDB_TRACK_ASSETS',
  'CMDB_TRACK_USERS',
  'CMDB_TIMEZONE',
];

const envArb = fc.dictionary(
  fc.constantFrom(...ENV_NAMES),
  fc.oneof(fc.string({ unit: 'binary', maxLength: 60 }), fc.constantFrom('', '0', '-1', '1e400', 'https://cmdb.example.com', '/dev/null', '/nonexistent', 'NaN', 'true')),
  { maxKeys: 6 },
);

const yamlArb = fc.oneof(
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 300 }) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 5 }).map((v) => stringify(v)) },
  { weight: 4, arbitrary: hostileBody(EXAMPLE).map((json) => {
    try {
      return stringify(JSON.parse(json));
    } catch {
      return json; // not JSON: the text itself is the YAML
    }
  }) },
  // YAML's own hazards: anchors and aliases, tags, merge keys, duplicate keys.
  { weight: 1, arbitrary: fc.constantFrom(
    'a: &a [*a]\n',
    'stacks: !!binary aGVsbG8=\n',
    'x: &x {stacks: []}\n<<: *x\n',
    'stacks: []\nstacks: []\n',
    'stacks:\n  - name: a\n    baseUrl: http://127.0.0.1:1\n    token: !!js/function "() => 1"\n',
    `${'- '.repeat(2000)}x\n`,
  ) },
);

describe('config loader', () => {
  test.prop([yamlArb, envArb], { numRuns: RUNS, ...SEED })('throws nothing but ConfigError', (yaml, env) => {
    const configFile = scratch.file('exporter.yaml', yaml);
    try {
      loadConfig({ configFile, env });
    } catch (err) {
      expect(err, String(err instanceof Error ? err.stack : err)).toBeInstanceOf(ConfigError);
    }
  }, RUNS * 500); // generous: a loaded 2-core machine loads ~10 configurations a second
});
