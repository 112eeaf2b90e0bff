/** Abort signals combined without leaking listeners on long-lived signals. */

/** The waits that follow one long-lived signal, and the one listener they share on it. */
interface Followers {
  readonly waits: Set<(reason: unknown) => void>;
  readonly onAbort: () => void;
}

const followersOf = new WeakMap<AbortSignal, Followers>();

/**
 * Calls `onAbort` with the reason when `signal` aborts (at once if it has), until the returned
 * function is called.
 * However many waits follow one signal at once (every request waiting for a stack's budget follows
 * the stack's stop signal; every request of a poll follows the poll's signal), the signal carries
 * ONE listener: one per wait would pass Node's limit of 10 per signal and warn of a leak
 * (MaxListenersExceededWarning) as soon as eleven requests wait, which is normal, not a leak.
 */
export function followAbort(signal: AbortSignal, onAbort: (reason: unknown) => void): () => void {
  if (signal.aborted) {
    onAbort(signal.reason);
    return () => undefined;
  }
  let followers = followersOf.get(signal);
  if (!followers) {
    const waits = new Set<(reason: unknown) => void>();
    const onAbort = () => {
      followersOf.delete(signal);
      for (const wait of [...waits]) wait(signal.reason);
      waits.clear();
    };
    followers = { waits, onAbort };
    followersOf.set(signal, followers);
    signal.addEventListener('abort', onAbort, { once: true });
  }
  const mine = followers;
  const wait = (reason: unknown) => onAbort(reason);
  mine.waits.add(wait);
  return () => {
    if (!mine.waits.delete(wait) || mine.waits.size > 0) return;
    // The last wait let go: so does the signal's listener (a poll's signal outlives its waits).
    signal.removeEventListener('abort', mine.onAbort);
    if (followersOf.get(signal) === mine) followersOf.delete(signal);
  };
}

/**
 * A signal aborted when either is (with the reason of the first); dispose() lets go of both.
 * Not AbortSignal.any: a poll's signal lives for the whole poll and is combined once per wait.
 */
export function eitherSignal(a: AbortSignal, b: AbortSignal | undefined): { signal: AbortSignal; dispose(): void } {
  if (!b) return { signal: a, dispose: () => undefined };
  const ctl = new AbortController();
  if (a.aborted) ctl.abort(a.reason);
  else if (b.aborted) ctl.abort(b.reason);
  if (ctl.signal.aborted) return { signal: ctl.signal, dispose: () => undefined };
  const abort = (reason: unknown) => ctl.abort(reason);
  const leaveA = followAbort(a, abort);
  const leaveB = followAbort(b, abort);
  return {
    signal: ctl.signal,
    dispose() {
      leaveA();
      leaveB();
    },
  };
}
