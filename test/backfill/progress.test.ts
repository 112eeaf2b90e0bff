import { describe, expect, it } from 'vitest';
import { Progress } from '../../src/backfill/progress.js';

function sink(isTTY: boolean) {
  const writes: string[] = [];
  return { isTTY, writes, write: (t: string) => writes.push(t) };
}

describe('backfill progress', () => {
  it('on a terminal: a bar redrawn in place with the ETA, a newline at the end', () => {
    let now = 0;
    const out = sink(true);
    const p = new Progress('reading', 10, 'requests', out, () => now);
    now = 1000;
    p.advance(4);
    expect(out.writes.at(-1)).toBe('\r\x1b[2Kreading [############..................] 40% 4/10 requests, ETA 2s');
    now = 1100;
    p.advance(); // redrawn at most every 200 ms
    expect(out.writes).toHaveLength(1);
    p.grow(5);
    now = 5000;
    p.finish('(15 sent)');
    expect(out.writes.at(-1)).toBe('\r\x1b[2Kreading [##############################] 100% 15/15 requests, took 5s (15 sent)\n');
  });

  it('in a pipe or a log: plain lines, at most one per 10 s, and the last one', () => {
    let now = 0;
    const out = sink(false);
    const p = new Progress('writing', 100, 'seconds of history', out, () => now);
    for (let i = 1; i <= 100; i++) {
      now = i * 500;
      p.set(i);
    }
    p.finish();
    expect(out.writes.every((w) => w.endsWith('\n') && !w.includes('\r') && !w.includes('\x1b'))).toBe(true);
    expect(out.writes.length).toBeGreaterThanOrEqual(5);
    expect(out.writes.length).toBeLessThanOrEqual(7);
    expect(out.writes.at(-1)).toMatch(/^writing \[#{30}\] 100% 100\/100 seconds of history, took 50s\n$/);
  });

  it('a stack whose failures run towards the fail-fast limit ends when the rule stops it, not at the pace of its failures; the line says so', () => {
    let now = 0;
    const out = sink(true);
    const p = new Progress('reading history', 35 + 10, 'requests', out, () => now);
    const failing = p.part('real', 35);
    const fine = p.part('other', 10);
    // The first unit of 'real' fails after 130 s (a token request timing out, retries and all).
    now = 130_000;
    failing.step();
    failing.outlook({ seconds: 260, why: 'requests timed out: 1 in a row, 3 stop the reading' });
    for (let i = 0; i < 10; i++) fine.step();
    // Not 34 × 130 s (1h13m40s): 260 s, until the rule stops it.
    expect(p.line()).toBe('reading history [#######.......................] 24% 11/45 requests, ETA 4m20s (stack real stops reading within 4m20s unless its CMDB answers: requests timed out: 1 in a row, 3 stop the reading)');
    now = 200_000;
    expect(p.line()).toContain('ETA 3m10s (stack real stops reading within 3m10s');
    // An answer: the outlook is gone, the pace counts again.
    failing.outlook(undefined);
    expect(p.line()).toMatch(/ETA 1h\d+m\d+s$/);
  });

  it('a healthy stack slower than the outlook of a failing one sets the ETA', () => {
    let now = 0;
    const p = new Progress('reading history', 20, 'requests', sink(false), () => now);
    const failing = p.part('a', 10);
    const slow = p.part('b', 10);
    now = 60_000;
    failing.step();
    failing.outlook({ seconds: 30, why: 'x' });
    slow.step();
    // b: 9 more at 60 s each.
    expect(p.line()).toContain('ETA 9m (stack a stops reading within 30s unless its CMDB answers: x)');
  });
});

