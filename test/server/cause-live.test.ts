/**
 * The cause line from a running exporter: its stacks' requests are recorded as they leave
 * (src/cmdb/recent.ts through the transport), the status page's memory observes every poll
 * (src/status-memory.ts), and a stack whose CMDB stops answering leads the page with "CMDB
 * unreachable" at the first poll whose requests to two endpoints all failed (issue 37: before, only
 * after a minute of failures, about two with timeouts), dated from when the first of them was sent,
 * while the other stack is untouched.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { RecentRequests } from '../../src/cmdb/recent.js';
import type { RequestOutcome } from '../../src/errors.js';
import { renderLanding } from '../../src/server/landing.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { configFor, stackFor, startExporter } from '../helpers/exporter.js';

let up: SimulatorServer;
let down: SimulatorServer;
let app: App;

beforeAll(async () => {
  up = await startSimulator({ seed: 3 });
  down = await startSimulator({ seed: 4 });
  const fast = { retries: { max: 0, minDelaySeconds: 0.1, maxDelaySeconds: 0.1, maxRetryAfterSeconds: 1 } };
  ({ app } = await startExporter(configFor([stackFor(up, { name: 'up', ...fast }), stackFor(down, { name: 'down', ...fast })])));
  await app.pollOnce();
});

afterAll(async () => {
  await app?.close(0);
  await up?.close();
  await down?.close();
});

const stack = (name: string) => app.landing().stacks.find((s) => s.name === name);

describe('a stack whose CMDB stops answering', () => {
  it('records its requests, and at the first poll whose requests all failed leads the page with CMDB unreachable', async () => {
    expect(stack('down')?.requests).toMatchObject({ failures: 0 });
    expect(renderLanding(app.landing())).not.toContain('CMDB unreachable');
    const before = Date.now() / 1000;
    down.addFault({ endpoint: '*', reset: true });
    await app.pollOnce();
    const failing = stack('down')?.requests;
    expect(failing?.failures).toBeGreaterThan(1);
    expect(failing?.failingEndpoints).toBeGreaterThan(1);
    // Since the first failing request was sent: during this poll, not before the fault.
    expect(failing?.failingSince).toBeGreaterThanOrEqual(Math.floor(before));
    const page = renderLanding(app.landing());
    const block = page.slice(page.indexOf('data-stack="down"'));
    expect(block).toMatch(/^data-stack="down"><h3>.*?<span class="state critical">critical<\/span><\/h3><ul><li class="critical cause">/);
    expect(block).toContain('<b class="cause-title">CMDB unreachable</b>');
    expect(block).toMatch(/none of the last \d+ requests \(to \d+ endpoints\) got an answer/);
    // The other stack keeps its own problems (its simulator has some by design), and no cause.
    const other = page.slice(page.indexOf('data-stack="up"'), page.indexOf('</div>', page.indexOf('data-stack="up"')));
    expect(other).not.toContain('cause');
    expect(other).not.toContain(' endpoint <code>');
  });

  it('drops the cause at the first answer', async () => {
    down.clearFaults();
    await app.pollOnce();
    expect(stack('down')?.requests).toMatchObject({ failures: 0 });
    expect(renderLanding(app.landing())).not.toContain('CMDB unreachable');
  });
});

describe('RecentRequests', () => {
  const report = (outcome: RequestOutcome, sentAt: number, endpoint = 'license') => ({ outcome, endpoint, sentAt: sentAt * 1000 });

  it('counts the failures in a row to connect or to get an answer in time, since the first was sent; any answer ends them', () => {
    const r = new RecentRequests();
    r.record(report('200', 9), 10);
    r.record(report('network', 20), 20);
    // A timeout is known timeoutSeconds after it left: the failing began when it was sent.
    r.record(report('timeout', 12, 'connector'), 42);
    expect(r.snapshot()).toEqual({ failures: 2, failingEndpoints: 2, failingSince: 12, lastAnswerAt: 10 });
    r.record(report('503', 40), 45);
    expect(r.snapshot()).toEqual({ failures: 0, failingEndpoints: 0, lastAnswerAt: 45 });
  });

  it('never dates the failing before the newest answer: a request sent before it was overtaken by it', () => {
    const r = new RecentRequests();
    r.record(report('200', 30), 31);
    r.record(report('timeout', 5), 35);
    expect(r.snapshot()).toMatchObject({ failures: 1, failingSince: 31 });
  });
});
