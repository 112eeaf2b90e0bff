/** Starts the real simulator on loopback for a test and closes it afterwards. */
import { afterEach } from 'vitest';
import { startSimulator } from '../../../src/simulator/server.js';
import type { RequestRecord, Simulator, SimulatorOptions } from '../../../src/simulator/api.js';
import type { EndpointName } from '../../../src/api/endpoints.js';
import type { StackConfig } from '../../../src/config/types.js';
import { testStack, type StackOverrides } from './stack.js';
import { trackedAssetNames, trackedUserNames } from '../../../src/simulator/data/changes.js';

const running: Simulator[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.close()));
});

export async function sim(opts: SimulatorOptions = {}): Promise<Simulator> {
  const s = await startSimulator({ host: '127.0.0.1', port: 0, ...opts });
  running.push(s);
  return s;
}

/** A test stack pointed at the simulator with its client credentials. */
export function simStack(s: Simulator, overrides: StackOverrides = {}): StackConfig {
  return testStack({
    baseUrl: s.url,
    auth: { kind: 'client', clientId: s.clientId, secret: s.secret, clientIdKey: 'clientID' },
    ...overrides,
  });
}

export function requestsTo(s: Simulator, endpoint: EndpointName): RequestRecord[] {
  return s.requests().filter((r) => r.endpoint === endpoint);
}

/** Raw paths of the requests, in order, without the token requests. */
export function dataPaths(s: Simulator): string[] {
  return s
    .requests()
    .filter((r) => r.endpoint !== 'access_token')
    .map((r) => r.rawPath);
}

/**
 * A name the simulator keeps a change log for. Taken from its data generator: the contract
 * (api.ts) does not list tracked names, and GET /_admin/state would show up in the request log.
 */
export function trackedAsset(): string {
  const [name] = trackedAssetNames(1);
  if (!name) throw new Error('the simulator tracks no asset');
  return name;
}

export function trackedUser(): string {
  const [name] = trackedUserNames(1);
  if (!name) throw new Error('the simulator tracks no user');
  return name;
}
