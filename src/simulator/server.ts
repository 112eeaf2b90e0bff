/**
 * The embedded CMDB simulator: `startSimulator` implements the Simulator contract of api.ts over
 * node:http (or node:https with `tls`), so raw paths, resets and byte-level bodies stay in our hands.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { DataEndpoint } from '../api/endpoints.js';
import { ConfigError } from '../errors.js';
import { COMPRESSIONS, type Compression, type FaultRule, type RequestRecord, type Simulator, type SimulatorOptions } from './api.js';
import { RateLimiter, TokenStore } from './access.js';
import { serveAdmin } from './admin.js';
import { checkConnectorPace, stateSummary, type Core, type SimulatorState } from './core.js';
import { startChurn, type ChurnTarget } from './churn.js';
import { buildDataset, resolveSize, type Dataset } from './data/dataset.js';
import { FaultBook, type SimulatorFaultRule } from './faults.js';
import { errorReply, send } from './http-io.js';
import { MAX_PAGE_SIZE } from './paging.js';
import { RequestLog } from './request-log.js';
import { route } from './routes.js';
import { serveCmdb } from './serve-cmdb.js';
import { createScenario } from './scenario.js';
import { Timeline } from './timeline.js';

export const DEFAULT_CLIENT_ID = 'demo-client';
export const DEFAULT_SECRET = 'demo-secret';
export const DEFAULT_PAGE_SIZE = 20;
const LIVE_TICK_MS = 1000;

/** The contract plus what the simulator's own tests and tools use. */
export interface SimulatorServer extends Simulator {
  addFault(rule: SimulatorFaultRule): void;
  /** Same JSON as GET /_admin/state. */
  state(): SimulatorState;
  /** The live data (read it; change it through `scenario`). */
  readonly dataset: Dataset;
}

function checkPageSize(size: number): number {
  if (!Number.isInteger(size) || size < 1 || size > MAX_PAGE_SIZE) {
    throw new ConfigError([{ path: 'connectorPageSize', message: `must be an integer from 1 to ${MAX_PAGE_SIZE}` }]);
  }
  return size;
}

const MAX_CONNECTOR_PERIOD_S = 30 * 86_400;

function checkConnectorPeriod(seconds: number | undefined): number | undefined {
  if (seconds !== undefined && (!Number.isInteger(seconds) || seconds < 60 || seconds > MAX_CONNECTOR_PERIOD_S)) {
    throw new ConfigError([{ path: 'connectorPeriodSeconds', message: `must be an integer from 60 to ${MAX_CONNECTOR_PERIOD_S}` }]);
  }
  return seconds;
}

function checkHistoryDays(days: number | undefined): number | undefined {
  if (days !== undefined && (!Number.isInteger(days) || days < 1 || days > 400)) {
    throw new ConfigError([{ path: 'historyDays', message: 'must be an integer from 1 to 400' }]);
  }
  return days;
}

/** Churn keeps the seeded entities and changes the status texts of the first `statusTargets` of them. */
function churnTarget(core: Core): ChurnTarget {
  return { scenario: core.scenario, connectors: [...core.data.connectors.keys()], actionIds: [...core.data.actions.keys()] };
}

function checkCompression(value: Compression): Compression {
  if (!COMPRESSIONS.includes(value)) throw new ConfigError([{ path: 'compression', message: `must be one of ${COMPRESSIONS.join(', ')}` }]);
  return value;
}

function buildCore(opts: SimulatorOptions): Core {
  const seed = opts.seed ?? 42;
  if (!Number.isInteger(seed)) throw new ConfigError([{ path: 'seed', message: 'must be an integer' }]);
  const clock = opts.now ?? Date.now;
  const data = buildDataset(seed, resolveSize(opts.size), clock(), checkConnectorPeriod(opts.connectorPeriodSeconds), checkHistoryDays(opts.historyDays));
  const timeline = new Timeline(data, clock);
  const faults = new FaultBook();
  for (const rule of opts.faults ?? []) faults.add(rule);
  return {
    data,
    timeline,
    scenario: createScenario(timeline),
    tokens: new TokenStore(() => timeline.now(), opts.oneTokenPerClient === true),
    limiter: new RateLimiter(() => timeline.now()),
    faults,
    forbidden: new Set<DataEndpoint>(),
    log: new RequestLog(),
    clientId: opts.clientId ?? DEFAULT_CLIENT_ID,
    secret: opts.secret ?? DEFAULT_SECRET,
    connectorPageSize: checkPageSize(opts.connectorPageSize ?? DEFAULT_PAGE_SIZE),
    actionPageSize: DEFAULT_PAGE_SIZE,
    ignoreSort: opts.ignoreSort ?? false,
    compression: checkCompression(opts.compression ?? 'off'),
    connectorPace: checkConnectorPace(opts.connectorPace),
    insertCursor: 0,
    live: opts.live ?? false,
    timers: new Set(),
  };
}

function handler(core: Core) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const rawPath = q < 0 ? url : url.slice(0, q);
    const rawQuery = q < 0 ? '' : url.slice(q + 1);
    const target = route(rawPath);
    const work =
      target.kind === 'admin'
        ? serveAdmin(core, req, target.segments).then((reply) => send(res, reply))
        : serveCmdb(core, req, res, { route: target, rawPath, rawQuery });
    work.catch((err: unknown) => {
      // A bug, not a fault the client should see as data: answer 500 and say so on stderr.
      console.error('simulator: request failed', err);
      if (!res.headersSent) send(res, errorReply(500, 'Internal simulator error'));
      else res.destroy();
    });
  };
}

function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

export async function startSimulator(opts: SimulatorOptions = {}): Promise<SimulatorServer> {
  const core = buildCore(opts);
  const host = opts.host ?? '127.0.0.1';
  const server: Server = opts.tls
    ? createHttpsServer({ cert: opts.tls.cert, key: opts.tls.key }, handler(core))
    : createHttpServer(handler(core));
  const port = await listen(server, host, opts.port ?? 0);
  const ticker = core.live ? setInterval(() => core.timeline.catchUp(), LIVE_TICK_MS).unref() : undefined;
  const stopChurn = opts.churn ? startChurn(churnTarget(core), opts.churn) : undefined;
  const hostInUrl = host.includes(':') ? `[${host}]` : host;

  return {
    url: `${opts.tls ? 'https' : 'http'}://${hostInUrl}:${port}`,
    port,
    clientId: core.clientId,
    secret: core.secret,
    dataset: core.data,
    scenario: core.scenario,
    addFault: (rule: FaultRule) => core.faults.add(rule),
    clearFaults: () => core.faults.clear(),
    faults: () => core.faults.list(),
    setTokenExpiry: (expiry) => core.tokens.setExpiry(expiry),
    setRateLimit: (limit) => core.limiter.set(limit),
    forbid: (endpoints) => {
      core.forbidden = new Set(endpoints);
    },
    setConnectorPace: (pace) => {
      core.connectorPace = checkConnectorPace(pace);
    },
    requests: (): RequestRecord[] => core.log.list(),
    clearRequests: () => core.log.clear(),
    issuedTokens: () => core.tokens.issued(),
    state: () => stateSummary(core),
    close: () =>
      new Promise<void>((resolve) => {
        if (ticker) clearInterval(ticker);
        stopChurn?.();
        for (const timer of core.timers) clearTimeout(timer);
        core.timers.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
