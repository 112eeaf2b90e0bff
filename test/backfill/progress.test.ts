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
});
