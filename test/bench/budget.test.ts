/** The request-budget cell's arithmetic: the busiest rolling window and the naive schedule. */
import { describe, expect, it } from 'vitest';
import { busiestWindow, naiveSchedule } from '../../bench/budget.js';
import { VirtualTime } from '../../bench/virtual-time.js';
import { testStack } from '../helpers/stack.js';

describe('busiestWindow', () => {
  it('counts the most entries in any window, a window being [start, start + length)', () => {
    expect(busiestWindow([0, 10, 59_999, 60_000, 60_001, 119_000], 60_000)).toEqual({ count: 4, at: 10 });
    expect(busiestWindow([0, 70_000, 71_000, 72_000, 129_999], 60_000)).toEqual({ count: 4, at: 70_000 });
    expect(busiestWindow([], 60_000).count).toBe(0);
  });
});

describe('naiveSchedule', () => {
  it('asks every endpoint at its interval, every page, every Action and every tracked name', () => {
    const stack = testStack({ track: { assets: ['a', 'b'], users: ['u'] } });
    const naive = naiveSchedule(stack, { actions: 200, connectorRows: 3180 });
    expect(naive).toEqual({
      metrics_data: 12,
      license: 1,
      connector: 24, // two pages of 2,000 every 5 minutes
      data_ingestion: 60,
      data_ingestion_next: 60,
      data_ingestion_detail: 60,
      actions: 24, // two pages of 100
      action_jobs: 2400,
      asset_change: 8,
      user_change: 4,
    });
  });
});

describe('VirtualTime', () => {
  it('resolves sleeps only when time is moved, oldest first, and fires a cron again and again', async () => {
    const time = new VirtualTime(0);
    const order: string[] = [];
    void time.sleep(2000).then(() => order.push('2s'));
    void time.sleep(1000).then(() => order.push('1s'));
    const task = time.cron((_name, now) => now + 1500).schedule('', () => order.push(`cron@${time.now()}`), 's/g');
    expect(time.next()).toBe(1000);
    time.advance(1000);
    time.advance(1500);
    time.advance(2000);
    time.advance(3000);
    task.stop();
    time.advance(10_000);
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual(['cron@1500', 'cron@3000', '1s', '2s']);
  });
});
