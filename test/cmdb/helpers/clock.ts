import type { Clock } from '../../../src/cmdb/clock.js';

/** A clock whose sleeps return at once and move time forward; every sleep is recorded. */
export class FakeClock implements Clock {
  readonly sleeps: number[] = [];
  constructor(public t = 1_700_000_000_000) {}

  now(): number {
    return this.t;
  }

  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw new Error('aborted');
    this.sleeps.push(ms);
    this.t += ms;
  }
}
