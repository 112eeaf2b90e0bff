/**
 * Time source of the client. Waits (back-off, rate budget, Retry-After) go through `sleep` so tests
 * can run them on a fake clock; per-attempt deadlines use real timers because they bound real I/O.
 */
import { followAbort } from '../signals.js';

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms`; rejects at once when `signal` aborts (also when it is already aborted). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('aborted');
}

/**
 * Waits until the wake that `enlist` files is called, or rejects when `signal` aborts, after
 * taking the wake back (the function `enlist` returns). Every wait on one poll's signal shares
 * one listener on it (followAbort): many requests wait on one signal at once.
 */
export function wakeOrAbort(signal: AbortSignal | undefined, enlist: (wake: () => void) => () => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const withdraw = enlist(() => {
      leave();
      resolve();
    });
    const leave = signal
      ? followAbort(signal, () => {
          withdraw();
          reject(abortReason(signal));
        })
      : () => undefined;
  });
}

export const realClock: Clock = {
  now: () => Date.now(),
  // A signal already aborted rejects at once: followAbort calls back before the timer can fire.
  sleep: (ms: number, signal?: AbortSignal): Promise<void> =>
    wakeOrAbort(signal, (wake) => {
      const timer = setTimeout(wake, Math.max(0, ms));
      return () => clearTimeout(timer);
    }),
};

/** Settles like `promise`, or rejects as soon as `signal` aborts (the promise itself keeps running). */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    // Many requests may wait for one token on one poll's signal: followAbort keeps it at one listener.
    const leave = followAbort(signal, () => reject(abortReason(signal)));
    promise.finally(leave).then(resolve, (e: unknown) => reject(e instanceof Error ? e : new Error(String(e))));
  });
}
