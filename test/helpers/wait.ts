/**
 * The one wait of the test suite: a test waits for an EVENT (a process up, a poll done, a request
 * seen), never for the clock. `waitFor` asks its probe until the event has happened; its timeout is
 * only a bound against a hang, never a measure of speed, and a wait that runs into it fails naming
 * what it waited for and the last state it saw.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * How long a wait goes on before it fails as hung, unless the caller bounds it otherwise. On a
 * loaded 2-core machine starting the daemon through tsx alone takes 10–20 s, so it is generous; a
 * wait ends as soon as its event happened.
 */
export const WAIT_MS = 90_000;

const PROBE = Symbol('probe');

/** What a probe saw: the event, with its value, or not yet, with what it saw instead (for the failure message). */
export type Probe<T> = { readonly [PROBE]: true; readonly done: true; readonly value: T } | { readonly [PROBE]: true; readonly done: false; readonly last: unknown };

export const done = <T>(value: T): Probe<T> => ({ [PROBE]: true, done: true, value });
export const notYet = (last: unknown): Probe<never> => ({ [PROBE]: true, done: false, last });

/** Thrown by a probe when waiting longer cannot help (the process awaited has exited): ends the wait at once. */
export class StopWaiting extends Error {}

export interface WaitOptions {
  /** The bound against a hang (default WAIT_MS). */
  readonly timeoutMs?: number;
  /** Between two asks of the probe (default 100 ms). */
  readonly intervalMs?: number;
  /**
   * Why waiting cannot help any more (the process that would make the event happen exited, with
   * the end of its output), or undefined while it can: the wait then ends at once with that reason.
   */
  readonly gone?: () => string | undefined;
}

function isProbe(x: unknown): x is Probe<unknown> {
  return typeof x === 'object' && x !== null && PROBE in x;
}

function show(last: unknown): string {
  if (last instanceof Error) return last.message;
  if (typeof last === 'string') return last;
  const text = JSON.stringify(last, null, 1) ?? String(last);
  return text.length > 16_000 ? `${text.slice(0, 16_000)}… (${text.length} characters)` : text;
}

/**
 * Asks `probe` until the event `what` has happened, and returns its value. The probe answers
 * `done(value)` or `notYet(whatItSaw)`, or simply a value: `undefined` and `false` mean "not yet",
 * anything else is the event's value. A probe that throws has not seen it yet either (its error is
 * the last state seen), but for StopWaiting, which ends the wait at once.
 */
export async function waitFor<T>(what: string, probe: () => Probe<T> | T | undefined | Promise<Probe<T> | T | undefined>, opts: WaitOptions = {}): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? WAIT_MS;
  const intervalMs = opts.intervalMs ?? 100;
  const deadline = Date.now() + timeoutMs;
  let last: unknown = 'no ask of the probe finished';
  for (;;) {
    try {
      const seen = await probe();
      if (isProbe(seen)) {
        if (seen.done) return seen.value as T;
        last = seen.last;
      } else if (seen !== undefined && (seen as unknown) !== false) {
        return seen as T;
      } else {
        last = seen;
      }
    } catch (err) {
      if (err instanceof StopWaiting) throw new StopWaiting(`${err.message} (while waiting for ${what})`);
      last = err;
    }
    const gone = opts.gone?.();
    if (gone !== undefined) throw new StopWaiting(`waiting for ${what}, and it cannot come: ${gone}\nlast seen: ${show(last)}`);
    if (Date.now() + intervalMs > deadline) break;
    await sleep(intervalMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms (a bound against a hang) waiting for ${what}; last seen:\n${show(last)}`);
}
