/**
 * The cause line from a running exporter: its stacks' requests are recorded as they leave
 * (src/cmdb/recent.ts through the transport), the status page's memory observes every poll
 * (src/status-memory.ts), and a stack whose CMDB stops answering leads the page with "CMDB
 * unreachable" once its requests have failed for a minute, while the other stack is untouched.
 * The exporter's clock is the test's, so the minute passes at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { RecentRequests } from '../../src/cmdb/recent.js';
import { renderLanding } from '../../src/server/landing.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { configFor, stackFor, startExporter } from '../helpers/exporter.js';

let up: SimulatorServer;
let down: SimulatorServer;
let app: App;
let offset = 0;

beforeAll(async () => {
  up = await startSimulator({ seed: 3 });
  down = await startSimulator({ seed: 4 });
  const fast = { retries: { max: 0, minDelaySeconds: 0.1, maxDelaySeconds: 0.1, maxRetryAfterSeconds: 1 } };
  ({ app } = await startExporter(configFor([stackFor(up, { name: 'up', ...fast }), stackFor(down, { name: 'down', ...fast })]), { nowMs: () => Date.now() + offset }));
  await app.pollOnce();
});

afterAll(async () => {
  await app?.close(0);
  await up?.close();
  await down?.close();
});

const stack = (name: string) => app.landing().stacks.find((s) => s.name === name);

describe('a stack whose CMDB stops answering', () => {
  it('records its requests, and after a minute of failures leads the page with CMDB unreachable', async () => {
    expect(stack('down')?.requests).toMatchObject({ failures: 0 });
    down.addFault({ endpoint: '*', reset: true });
    await app.pollOnce();
    const failing = stack('down')?.requests;
    expect(failing?.failures).toBeGreaterThan(1);
    // Not a minute yet: no cause, only the endpoints down.
    expect(renderLanding(app.landing())).not.toContain('CMDB unreachable');
    offset += 61_000;
    await app.pollOnce();
    const page = renderLanding(app.landing());
    const block = page.slice(page.indexOf('data-stack="down"'));
    expect(block).toMatch(/^data-stack="down"><h3>.*?<span class="state critical">critical<\/span><\/h3><ul><li class="critical cause">/);
    expect(block).toContain('<b class="cause-title">CMDB unreachable</b>');
    // The other stack keeps its own problems (its simulator has some by design), and no cause.
    const other = page.slice(page.indexOf('data-stack="up"'), page.indexOf('</div>', page.indexOf('data-stack="up"')));
    expect(other).not.toContain('cause');
    expect(other).not.toContain('endpoint');
  });

  it('drops the cause at the first answer', async () => {
    down.clearFaults();
    await app.pollOnce();
    expect(stack('down')?.requests).toMatchObject({ failures: 0 });
    expect(renderLanding(app.landing())).not.toContain('CMDB unreachable');
  });
});

describe('RecentRequests', () => {
  it('counts the failures in a row to connect or to get an answer in time; any answer ends them', () => {
    const r = new RecentRequests();
    r.record('200', 10);
    r.record('network', 20);
    r.record('timeout', 30);
    expect(r.snapshot()).toEqual({ failures: 2, failingSince: 20, lastAnswerAt: 10 });
    r.record('503', 40);
    expect(r.snapshot()).toEqual({ failures: 0, lastAnswerAt: 40 });
  });
});
