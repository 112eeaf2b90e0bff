/** The event loop's longest stall, measured in the process whose loop it is. */

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
