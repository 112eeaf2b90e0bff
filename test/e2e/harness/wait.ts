/**
 * Bounded polling: every wait in the end-to-end tests has a deadline and a maximum number of
 * attempts, and a failure says what was awaited and what was last seen.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export type Probe<T> = { readonly done: true; readonly value: T } | { readonly done: false; readonly last: unknown };

export const done = <T>(value: T): Probe<T> => ({ done: true, value });
export const notYet = (last: unknown): Probe<never> => ({ done: false, last });

/** Thrown by a probe when waiting longer cannot help (the process awaited has exited): ends the wait at once. */
export class StopWaiting extends Error {}

export interface WaitOptions {
  readonly timeoutMs: number;
  readonly intervalMs: number;
}

function show(last: unknown): string {
  if (last instanceof Error) return last.message;
  if (typeof last === 'string') return last;
  const text = JSON.stringify(last, null, 1);
  return text.length > 16_000 ? `${text.slice(0, 16_000)}… (${text.length} characters)` : text;
}

/** Calls `probe` until it reports done, at most timeoutMs/intervalMs + 1 times and for timeoutMs. */
export async function waitFor<T>(what: string, probe: () => Promise<Probe<T>>, opts: WaitOptions): Promise<T> {
  const deadline = Date.now() + opts.timeoutMs;
  const maxAttempts = Math.ceil(opts.timeoutMs / opts.intervalMs) + 1;
  let last: unknown = 'no attempt finished';
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    try {
      const result = await probe();
      if (result.done) return result.value;
      last = result.last;
    } catch (err) {
      if (err instanceof StopWaiting) throw err;
      last = err;
    }
    if (Date.now() + opts.intervalMs > deadline) break;
    await sleep(opts.intervalMs);
  }
  throw new Error(`timed out after ${opts.timeoutMs} ms waiting for ${what}; last seen:\n${show(last)}`);
}
