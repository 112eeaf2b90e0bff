import { describe, expect, it } from 'vitest';
import { PATHS, type DataEndpoint } from '../../src/api/endpoints.js';
import { PLANTED_SECRETS, type SimulatorSize } from '../../src/simulator/api.js';
import type { SimulatorServer } from '../../src/simulator/server.js';
import { fetchToken, get, sim, strings } from './helpers.js';

/** Free-text fields that may hold credentials; the exporter never turns them into labels. */
const SECRET_FIELDS = ['docker_cmd', 'source_settings', 'error_msg', 'event_messages', 'action_status_msg'];

async function everyBody(s: SimulatorServer): Promise<Array<{ endpoint: DataEndpoint; body: unknown }>> {
  const token = await fetchToken(s);
  const state = s.state();
  const paths: Array<[DataEndpoint, string]> = [
    ['metrics_data', PATHS.metrics_data()[0] as string],
    ['license', PATHS.license()[0] as string],
    ['connector', `${PATHS.connector()[0]}?size=5000`],
    ['data_ingestion', PATHS.data_ingestion()[0] as string],
    ['data_ingestion_next', PATHS.data_ingestion_next()[0] as string],
    ['actions', `${PATHS.actions()[0]}?size=5000`],
    ...state.ingestionRunIds.map((id): [DataEndpoint, string] => ['data_ingestion_detail', PATHS.data_ingestion_detail(id)[0] as string]),
    ...state.actionIds.map((id): [DataEndpoint, string] => ['action_jobs', PATHS.action_jobs(id)[0] as string]),
    ...state.trackedAssets.map((n): [DataEndpoint, string] => ['asset_change', `${PATHS.asset_change()[0]}?id=${encodeURIComponent(n)}`]),
    ...state.trackedUsers.map((n): [DataEndpoint, string] => ['user_change', `${PATHS.user_change()[0]}?id=${encodeURIComponent(n)}`]),
  ];
  const out: Array<{ endpoint: DataEndpoint; body: unknown }> = [];
  for (const [endpoint, path] of paths) out.push({ endpoint, body: (await get(s, path, token)).body });
  return out;
}

function secretPlaces(bodies: Array<{ body: unknown }>): Array<{ secret: string; path: string[] }> {
  return bodies.flatMap(({ body }) =>
    strings(body).flatMap(({ path, text }) => PLANTED_SECRETS.filter((sec) => text.includes(sec)).map((secret) => ({ secret, path }))),
  );
}

describe('planted secrets', () => {
  it.each<[string, number, Partial<SimulatorSize>]>([
    ['default size, seed 42', 42, {}],
    ['default size, seed 1', 1, {}],
    ['tiny size', 42, { connectors: 1, actions: 1, ingestionRuns: 1, jobsPerAction: 1, tasksPerRun: 1 }],
    ['many connectors', 3, { connectors: 80 }],
  ])('appear only in free-text fields (%s)', async (_name, seed, size) => {
    const s = await sim({ seed, size });
    const places = secretPlaces(await everyBody(s));
    expect(places.length).toBeGreaterThan(0);
    for (const { path } of places) {
      expect(path.some((key) => SECRET_FIELDS.includes(key)), path.join('.')).toBe(true);
    }
  });

  it('are every one of them planted, in every kind of free-text field', async () => {
    const s = await sim();
    const places = secretPlaces(await everyBody(s));
    expect(new Set(places.map((p) => p.secret))).toEqual(new Set(PLANTED_SECRETS));
    for (const field of SECRET_FIELDS) {
      expect(places.some((p) => p.path.includes(field)), field).toBe(true);
    }
  });

  it('never appear in the admin state, the token answer or an error body', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    const texts = [
      JSON.stringify(s.state()),
      (await get(s, PATHS.action_jobs('missing')[0] as string, token)).text,
      (await get(s, `${PATHS.asset_change()[0]}?id=missing`, token)).text,
    ];
    for (const text of texts) for (const secret of PLANTED_SECRETS) expect(text).not.toContain(secret);
  });
});
