import { describe, expect, it } from 'vitest';
import { fanOut, type Cached } from '../../src/scheduler/fan-out.js';
import { CmdbAbortedError } from '../../src/errors.js';

function base(cache: Map<string, Cached<string>>, clock: { t: number }) {
  return { cache, concurrency: 2, staleAfterSeconds: 100, now: () => clock.t };
}

describe('fanOut', () => {
  it('fetches only the ids that are due and returns every current value in id order', async () => {
    const cache = new Map<string, Cached<string>>([['a', { value: 'old-a', fetchedAt: 0 }]]);
    const fetched: string[] = [];
    const r = await fanOut({
      ...base(cache, { t: 10 }),
      ids: ['a', 'b', 'c'],
      due: (_id, cached) => cached === undefined,
      fetch: async (id) => {
        fetched.push(id);
        return `new-${id}`;
      },
    });
    expect(fetched.sort()).toEqual(['b', 'c']);
    expect(r.values).toEqual([
      { id: 'a', value: 'old-a' },
      { id: 'b', value: 'new-b' },
      { id: 'c', value: 'new-c' },
    ]);
    expect(r.error).toBeUndefined();
  });

  it('keeps the last good value of a failed id until the stale limit, and reports the error', async () => {
    const cache = new Map<string, Cached<string>>([['a', { value: 'old-a', fetchedAt: 0 }]]);
    const clock = { t: 50 };
    const failing = { ...base(cache, clock), ids: ['a'], due: () => true, fetch: () => Promise.reject(new Error('503')) };
    const first = await fanOut(failing);
    expect(first.values).toEqual([{ id: 'a', value: 'old-a' }]);
    expect(first.error).toBeInstanceOf(Error);
    clock.t = 101;
    expect((await fanOut(failing)).values).toEqual([]);
  });

  it('forgets ids that are no longer listed', async () => {
    const cache = new Map<string, Cached<string>>([['gone', { value: 'x', fetchedAt: 0 }]]);
    await fanOut({ ...base(cache, { t: 1 }), ids: ['a'], due: () => true, fetch: async () => 'y' });
    expect([...cache.keys()]).toEqual(['a']);
  });

  it('never runs more fetches at once than the concurrency cap', async () => {
    let active = 0;
    let peak = 0;
    await fanOut({
      ...base(new Map(), { t: 1 }),
      ids: Array.from({ length: 10 }, (_, i) => `id${i}`),
      due: () => true,
      fetch: async (id) => {
        active++;
        peak = Math.max(peak, active);
        await new Promise((r) => setTimeout(r, 2));
        active--;
        return id;
      },
    });
    expect(peak).toBe(2);
  });

  it('rethrows a shutdown abort instead of reporting a partial result', async () => {
    await expect(
      fanOut({ ...base(new Map(), { t: 1 }), ids: ['a'], due: () => true, fetch: () => Promise.reject(new CmdbAbortedError('GET /x')) }),
    ).rejects.toBeInstanceOf(CmdbAbortedError);
  });
});
