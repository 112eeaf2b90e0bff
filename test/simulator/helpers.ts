/** Helpers for the simulator tests: real loopback HTTP against a simulator with a fixed clock. */
import { request as httpRequest } from 'node:http';
import { afterEach } from 'vitest';
import { PATHS, TOKEN_PATH, methodOf, type DataEndpoint } from '../../src/api/endpoints.js';
import type { SimulatorOptions } from '../../src/simulator/api.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';

export const FIXED_NOW = Date.parse('2025-03-10T12:34:56.000Z');

const running: SimulatorServer[] = [];

afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.close()));
});

/** A simulator with a fixed clock (closed after the test). */
export async function sim(opts: SimulatorOptions = {}): Promise<SimulatorServer> {
  const s = await startSimulator({ now: () => FIXED_NOW, ...opts });
  running.push(s);
  return s;
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  body: unknown;
}

async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, headers: res.headers, text, body };
}

export async function post(s: { url: string }, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(`${s.url}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    redirect: 'manual',
  });
  return answer(res);
}

export async function request(s: { url: string }, method: string, path: string, body?: unknown): Promise<Answer> {
  const res = await fetch(`${s.url}${path}`, {
    method,
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    redirect: 'manual',
  });
  return answer(res);
}

export async function fetchToken(s: Pick<SimulatorServer, 'url' | 'clientId' | 'secret'>): Promise<string> {
  const a = await post(s, TOKEN_PATH, { clientID: s.clientId, secret: s.secret });
  const token = (a.body as { data?: { token?: string } } | undefined)?.data?.token;
  if (a.status !== 200 || !token) throw new Error(`token request failed: ${a.status} ${a.text}`);
  return token;
}

export async function get(s: { url: string }, path: string, token?: string): Promise<Answer> {
  const res = await fetch(`${s.url}${path}`, {
    headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
    redirect: 'manual',
  });
  return answer(res);
}

/** Every spelling of an endpoint with a working argument and query, as the client would send it. */
export function spellings(s: SimulatorServer, endpoint: DataEndpoint): string[] {
  const state = s.state();
  const arg: Partial<Record<DataEndpoint, string>> = {
    data_ingestion_detail: state.ingestionRunIds.at(-1),
    action_jobs: state.actionIds[0],
    data_metadata: 'asset',
  };
  const query: Partial<Record<DataEndpoint, string>> = {
    asset_change: `?id=${encodeURIComponent(state.trackedAssets[0] ?? '')}`,
    user_change: `?id=${encodeURIComponent(state.trackedUsers[0] ?? '')}`,
  };
  return PATHS[endpoint](arg[endpoint] ?? '').map((p) => `${p}${query[endpoint] ?? ''}`);
}

/** A count of every asset, as the exporter's query reader asks it: the first page, one record. */
export const COUNT_BODY = { table: 'asset', query: [[{ searchFieldName: 'Asset_Name', operator: 'exists', type: 'String', value: null }]], paging: { page: 0, recordsPerPage: 1 } };

/** A request of `endpoint` at `path` as the client sends it: a GET, or for the data query a POST of COUNT_BODY. */
export async function ask(s: { url: string }, endpoint: DataEndpoint, path: string, token?: string): Promise<Answer> {
  if (methodOf(endpoint) === 'GET') return get(s, path, token);
  return post(s, path, COUNT_BODY, token ? { Authorization: `Bearer ${token}` } : {});
}

/** Every string inside a JSON value, with the key path that leads to it. */
export function strings(value: unknown, path: string[] = []): Array<{ path: string[]; text: string }> {
  if (typeof value === 'string') return [{ path, text: value }];
  if (Array.isArray(value)) return value.flatMap((v, i) => strings(v, [...path, String(i)]));
  if (value && typeof value === 'object') {
    return Object.entries(value).flatMap(([k, v]) => strings(v, [...path, k]));
  }
  return [];
}

/** GET with the path sent byte for byte (fetch would resolve `%2E%2E` segments first). */
export function rawGet(s: { port: number }, path: string, token?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port: s.port, path, method: 'GET', headers: token ? { Authorization: `Bearer ${token}` } : {} },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}
