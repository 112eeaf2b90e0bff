/** The event loop's stalls, measured in the process whose loop it is. */

/**
 * The event loop's longest stall from now until stop(): the largest gap between the turns of a 1 ms
 * timer chain, minus its 1 ms. (monitorEventLoopDelay misses a block that starts before its first
 * sample: it reported 1 ms for a 5 s synchronous swap.)
 */
export function loopDelay(): { stop(): Promise<number>; at(): number } {
  let last = performance.now();
  let max = 0;
  let maxAt = last;
  let timer: NodeJS.Timeout | undefined;
  const tick = () => {
    const now = performance.now();
    if (now - last - 1 > max) {
      max = now - last - 1;
      maxAt = last;
    }
    last = now;
    timer = setTimeout(tick, 1);
  };
  timer = setTimeout(tick, 1);
  return {
    stop: async () => {
      // Let the timer run once more, so that a block that just ended is counted.
      await new Promise((resolve) => setTimeout(resolve, 5));
      clearTimeout(timer);
      return Math.max(0, max);
    },
    /** When the longest block started (performance.now()). */
    at: () => maxAt,
  };
}

/**
 * Runs `work` and times it in this process: its wall time, the process CPU meanwhile (all threads),
 * and the event loop's longest block meanwhile (loopDelay) with when that block began.
 */
export async function timed<T>(work: () => Promise<T>) {
  const lag = loopDelay();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const value = await work();
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { value, wallMs, cpuMs: (cpu.user + cpu.system) / 1000, maxLoopDelayMs: await lag.stop(), blockAt: lag.at() };
}

/** A stall of an event loop: when it began (ms since the epoch), how long, and the process CPU meanwhile when asked. */
export interface Stall {
  readonly at: number;
  readonly ms: number;
  readonly cpuMs?: number;
}

/**
 * Every stall of the event loop over 20 ms (shorter ones cannot make a scrape slow), from a 2 ms
 * timer chain's gaps, until stop(). With `cpu`, each with the CPU the process used meanwhile (all its
 * threads: Node 20 has no per-thread figure), so that a stall with little CPU shows the machine
 * running other work and one with CPU the process's own.
 */
export function watchStalls(cpu = false): { stop(): Stall[] } {
  const stalls: Stall[] = [];
  let last = performance.now();
  let used = cpu ? process.cpuUsage() : undefined;
  let timer: NodeJS.Timeout;
  const tick = () => {
    const now = performance.now();
    const spent = used && process.cpuUsage(used);
    const stall = now - last - 2;
    if (stall > 20) stalls.push({ at: Date.now() - stall, ms: stall, ...(spent ? { cpuMs: (spent.user + spent.system) / 1000 } : {}) });
    last = now;
    if (used) used = process.cpuUsage();
    timer = setTimeout(tick, 2);
  };
  timer = setTimeout(tick, 2);
  return {
    stop: () => {
      clearTimeout(timer);
      return stalls;
    },
  };
}
