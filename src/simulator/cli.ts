/** Command line of `npm run simulator` (util.parseArgs): flags to SimulatorOptions. */
import { parseArgs } from 'node:util';
import { ConfigError, type ConfigIssue } from '../errors.js';
import { COMPRESSIONS, type Compression, type SimulatorOptions, type SimulatorSize } from './api.js';
import { parseFaultRule, type SimulatorFaultRule } from './faults.js';

export const USAGE = `Usage: npm run simulator -- [options]

Serves a simulated CMDB API (all endpoints of the spec) with seeded, realistic data.

  --port N                  port to listen on (default 8080; 0 = any free port)
  --host ADDR               address to bind (default 127.0.0.1)
  --seed N                  data seed (default 42)
  --client-id X --secret Y  credentials the token endpoint accepts (default demo-client / demo-secret)
  --one-token-per-client    keep only the newest token: a token request ends every earlier token, as
                            a service that keeps one token per client id does (default: all stay valid)
  --no-live                 freeze time (default: live, runs start and finish on a demo cadence)
  --now ISO                 start the clock at this time instead of now (with --no-live: a fixed clock)
  --page-size N             connector page size when a request has no size (default 20)
  --connector-period S      every connector runs once per S seconds (default: every 3-10 minutes;
                            86400 = once a day, as on the real service)
  --history-days N          spread the past Action jobs and ingestion runs over N days (for a
                            backfill; with --connector-period 86400 --runs-per-connector N)
  --ignore-sort             serve the connector history unsorted whatever sort= asks (default: honour it)
  --compression MODE        gzip answers for clients that accept it: gzip (Content-Length, the default),
                            gzip-chunked (streamed, as a compressing proxy), off
  --connector-ms-per-row N  serve each connector page after N ms per row on it (default 0; the real
                            service's ~2.3 s per 100 records is 23: a 2,000-row page takes ~46 s)
  --connector-base-ms N     plus N ms before every connector page (a round trip, e.g. 600)
  --connector-inserts-per-page N
                            write N new connector runs after each connector page is built, so that
                            a read meets rows written during it (default 0)
  --connectors N --profiles-per-connector N --runs-per-connector N --actions N
  --jobs-per-action N --ingestion-runs N --tasks-per-run N --tracked-assets N
  --tracked-users N --changes-per-record N --asset-records N --user-records N
                            data size knobs
  --churn-ms N              soak churn every N ms: connectors and Actions replaced by new ones,
                            status texts never seen before (default: no churn)
  --churn-entities N        connectors and Actions replaced per churn step (default 2)
  --no-churn-status         churn entities only, not status texts
  --fault SPEC              inject a fault from the start (repeatable), SPEC = endpoint:key=value,...
                            keys: status, latency (ms), times, retry-after (s), body, redirect (URL),
                            path (one spelling only), content-type, drip (ms per byte),
                            oversize (bytes), malformed, wrong-shape, reset, chunked,
                            content-encoding (gzip|deflate|br encode; any other name labels a plain body)
                            e.g. --fault license:status=503,times=3  --fault '*:latency=200'
  -h, --help                show this help`;

const SIZE_FLAGS: Record<string, keyof SimulatorSize> = {
  connectors: 'connectors',
  'profiles-per-connector': 'profilesPerConnector',
  'runs-per-connector': 'runsPerConnector',
  actions: 'actions',
  'jobs-per-action': 'jobsPerAction',
  'ingestion-runs': 'ingestionRuns',
  'tasks-per-run': 'tasksPerRun',
  'tracked-assets': 'trackedAssets',
  'tracked-users': 'trackedUsers',
  'changes-per-record': 'changesPerRecord',
  'asset-records': 'assetRecords',
  'user-records': 'userRecords',
};

const FAULT_KEYS: Record<string, (rule: Record<string, unknown>, value: string | undefined) => void> = {
  status: (r, v) => (r.status = Number(v)),
  latency: (r, v) => (r.latencyMs = Number(v)),
  hold: (r, v) => (r.hold = v === undefined || v === 'true'),
  times: (r, v) => (r.times = Number(v)),
  'retry-after': (r, v) => (r.retryAfterSeconds = Number(v)),
  'retry-after-date': (r, v) => (r.retryAfterDate = v === undefined || v === 'true'),
  body: (r, v) => (r.body = v ?? ''),
  redirect: (r, v) => (r.redirectTo = v),
  path: (r, v) => (r.path = v),
  malformed: (r, v) => (r.malformedJson = v === undefined || v === 'true'),
  'wrong-shape': (r, v) => (r.wrongShape = v === undefined || v === 'true'),
  reset: (r, v) => (r.reset = v === undefined || v === 'true'),
  'content-type': (r, v) => (r.contentType = v),
  'content-encoding': (r, v) => (r.contentEncoding = v),
  drip: (r, v) => (r.dripMs = Number(v)),
  oversize: (r, v) => (r.oversizeBytes = Number(v)),
  chunked: (r, v) => (r.chunked = v === undefined || v === 'true'),
};

/** `license:status=503,times=3` → a validated fault rule. */
export function parseFaultSpec(spec: string): SimulatorFaultRule {
  const colon = spec.indexOf(':');
  if (colon <= 0) throw new ConfigError([{ path: '--fault', message: `expected endpoint:key=value,... in ${JSON.stringify(spec)}` }]);
  const rule: Record<string, unknown> = { endpoint: spec.slice(0, colon) };
  for (const part of spec.slice(colon + 1).split(',').filter(Boolean)) {
    const eq = part.indexOf('=');
    const key = eq < 0 ? part : part.slice(0, eq);
    const apply = FAULT_KEYS[key];
    if (!apply) throw new ConfigError([{ path: '--fault', message: `unknown key ${JSON.stringify(key)} (keys: ${Object.keys(FAULT_KEYS).join(', ')})` }]);
    apply(rule, eq < 0 ? undefined : part.slice(eq + 1));
  }
  try {
    return parseFaultRule(rule);
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError(err.issues.map((i) => ({ path: `--fault ${i.path}`, message: i.message })));
    throw err;
  }
}

export interface CliOptions extends SimulatorOptions {
  port: number;
  host: string;
  live: boolean;
  faults: SimulatorFaultRule[];
}

function integer(flag: string, text: string | undefined, issues: ConfigIssue[]): number | undefined {
  if (text === undefined) return undefined;
  if (!/^-?\d+$/.test(text)) {
    issues.push({ path: `--${flag}`, message: `must be an integer, got ${JSON.stringify(text)}` });
    return undefined;
  }
  return Number(text);
}

const PACE_FLAGS = { 'connector-ms-per-row': 'msPerRow', 'connector-base-ms': 'baseMs', 'connector-inserts-per-page': 'insertsPerPage' } as const;

const STRING_FLAGS = [
  'port',
  'host',
  'seed',
  'client-id',
  'secret',
  'page-size',
  'connector-period',
  'history-days',
  'now',
  'churn-ms',
  'churn-entities',
  'compression',
  ...Object.keys(PACE_FLAGS),
  ...Object.keys(SIZE_FLAGS),
];

type FlagValues = Record<string, string | boolean | string[] | undefined>;

function readFlags(argv: readonly string[]): FlagValues {
  try {
    return parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        ...Object.fromEntries(STRING_FLAGS.map((f) => [f, { type: 'string' as const }])),
        'no-live': { type: 'boolean' },
        'ignore-sort': { type: 'boolean' },
        'one-token-per-client': { type: 'boolean' },
        'no-churn-status': { type: 'boolean' },
        fault: { type: 'string', multiple: true },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (err) {
    throw new ConfigError([{ path: 'arguments', message: (err as Error).message }]);
  }
}

function sizeFlags(text: (flag: string) => string | undefined, issues: ConfigIssue[]): Partial<SimulatorSize> {
  const size: Partial<SimulatorSize> = {};
  for (const [flag, knob] of Object.entries(SIZE_FLAGS)) {
    const n = integer(flag, text(flag), issues);
    if (n !== undefined) size[knob] = n;
  }
  return size;
}

function faultFlags(specs: readonly string[], issues: ConfigIssue[]): SimulatorFaultRule[] {
  const faults: SimulatorFaultRule[] = [];
  for (const spec of specs) {
    try {
      faults.push(parseFaultSpec(spec));
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      issues.push(...err.issues);
    }
  }
  return faults;
}

/** `--now`: the clock starts there; it moves with the wall clock when live and stands still otherwise. */
function clockFlag(text: string | undefined, live: boolean, issues: ConfigIssue[]): (() => number) | undefined {
  if (text === undefined) return undefined;
  const start = Date.parse(text);
  if (!Number.isFinite(start)) {
    issues.push({ path: '--now', message: 'must be an ISO 8601 time' });
    return undefined;
  }
  const offset = start - Date.now();
  return live ? () => Date.now() + offset : () => start;
}

/** The options for `startSimulator`, `'help'`, or a ConfigError naming every bad flag. */
export function parseCli(argv: readonly string[]): CliOptions | 'help' {
  const v = readFlags(argv);
  if (v.help) return 'help';
  const text = (flag: string) => v[flag] as string | undefined;
  const issues: ConfigIssue[] = [];
  const live = v['no-live'] !== true;
  const options: CliOptions = {
    port: integer('port', text('port'), issues) ?? 8080,
    host: text('host') ?? '127.0.0.1',
    seed: integer('seed', text('seed'), issues) ?? 42,
    size: sizeFlags(text, issues),
    live,
    faults: faultFlags((v.fault as string[] | undefined) ?? [], issues),
  };
  if (v['ignore-sort'] === true) options.ignoreSort = true;
  if (v['one-token-per-client'] === true) options.oneTokenPerClient = true;
  const compression = text('compression') ?? 'gzip';
  if ((COMPRESSIONS as readonly string[]).includes(compression)) options.compression = compression as Compression;
  else issues.push({ path: '--compression', message: `must be one of ${COMPRESSIONS.join(', ')}` });
  const pageSize = integer('page-size', text('page-size'), issues);
  if (pageSize !== undefined) options.connectorPageSize = pageSize;
  const period = integer('connector-period', text('connector-period'), issues);
  if (period !== undefined) options.connectorPeriodSeconds = period;
  for (const [flag, key] of Object.entries(PACE_FLAGS)) {
    const n = integer(flag, text(flag), issues);
    if (n !== undefined && n < 0) issues.push({ path: `--${flag}`, message: 'must be at least 0' });
    else if (n !== undefined) options.connectorPace = { ...options.connectorPace, [key]: n };
  }
  const historyDays = integer('history-days', text('history-days'), issues);
  if (historyDays !== undefined) options.historyDays = historyDays;
  if (text('client-id') !== undefined) options.clientId = text('client-id');
  if (text('secret') !== undefined) options.secret = text('secret');
  const now = clockFlag(text('now'), live, issues);
  if (now) options.now = now;
  const churnMs = integer('churn-ms', text('churn-ms'), issues);
  const churnEntities = integer('churn-entities', text('churn-entities'), issues);
  if (churnMs !== undefined && churnMs < 1) issues.push({ path: '--churn-ms', message: 'must be at least 1' });
  else if (churnMs !== undefined) {
    options.churn = { everyMs: churnMs, ...(churnEntities === undefined ? {} : { entities: churnEntities }), statusTexts: v['no-churn-status'] !== true };
  }
  if (issues.length > 0) throw new ConfigError(issues);
  return options;
}
