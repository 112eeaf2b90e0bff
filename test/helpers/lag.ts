/**
 * The longest stall of this process's event loop while a test runs: the largest gap between the
 * turns of a 10 ms timer chain, less its 10 ms. On a loaded machine a request the exporter planned
 * for time t may reach a simulator in the same process that much later; a check of the request
 * log's timing allows exactly what was measured, not a guessed margin.
 */
const STEP_MS = 10;

export interface LagWatch {
  /** The longest stall seen so far (ms), the timer's own step included. */
  maxMs(): number;
  stop(): void;
}

export function watchLag(): LagWatch {
  let last = performance.now();
  let max = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    max = Math.max(max, now - last - STEP_MS);
    last = now;
  }, STEP_MS);
  timer.unref();
  return {
    maxMs: () => Math.max(0, max) + STEP_MS,
    stop: () => clearInterval(timer),
  };
}
