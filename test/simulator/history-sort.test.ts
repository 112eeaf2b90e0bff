/** The connector history's sort, the switch that ignores it, and response bytes in the request log. */
import { afterEach, describe, expect, it } from 'vitest';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';

let running: SimulatorServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

async function start(ignoreSort?: boolean) {
  running = await startSimulator({ host: '127.0.0.1', port: 0, size: { connectors: 8, runsPerConnector: 4 }, ...(ignoreSort ? { ignoreSort } : {}) });
  const sim = running;
  const token = ((await (await fetch(`${sim.url}/CMDB/v1/access_token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ clientId: sim.clientId, secret: sim.secret }) })).json()) as { data: { token: string } }).data.token;
  const get = async (query: string) => {
    const res = await fetch(`${sim.url}/CMDB/v2/system/metrics/connector?${query}`, { headers: { authorization: `Bearer ${token}` } });
    return { text: await res.text(), status: res.status };
  };
  return { sim, get };
}

const times = (text: string) => (JSON.parse(text) as { content: Array<{ _time: number }> }).content.map((r) => r._time);
const descending = (t: number[]) => t.every((v, i) => i === 0 || (t[i - 1] as number) >= v);

describe('connector history sort', () => {
  it('honours sort=_time,desc by default, and serves its own unsorted order without it', async () => {
    const { get } = await start();
    expect(descending(times((await get('page=0&size=1000&sort=_time%2Cdesc')).text))).toBe(true);
    expect(descending(times((await get('page=0&size=1000')).text))).toBe(false);
  });

  it('with ignoreSort serves the unsorted order whatever sort= asks', async () => {
    const { get } = await start(true);
    const sorted = await get('page=0&size=1000&sort=_time%2Cdesc');
    expect(descending(times(sorted.text))).toBe(false);
    expect(sorted.text).toBe((await get('page=0&size=1000')).text);
  });

  it('records the response bytes of every request', async () => {
    const { sim, get } = await start();
    const { text } = await get('page=0&size=5');
    const logged = sim.requests().filter((r) => r.endpoint === 'connector');
    expect(logged).toHaveLength(1);
    expect(logged[0]?.bytes).toBe(Buffer.byteLength(text));
  });
});
