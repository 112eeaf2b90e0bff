/** Abort signals combined without leaking listeners on long-lived signals. */

/**
 * A signal aborted when either is (with the reason of the first); dispose() lets go of both.
 * Not AbortSignal.any: a poll's signal lives for the whole poll and is combined once per wait.
 */
export function eitherSignal(a: AbortSignal, b: AbortSignal | undefined): { signal: AbortSignal; dispose(): void } {
  if (!b) return { signal: a, dispose: () => undefined };
  const ctl = new AbortController();
  const onAbort = (event: Event) => ctl.abort((event.target as AbortSignal).reason);
  if (a.aborted) ctl.abort(a.reason);
  else if (b.aborted) ctl.abort(b.reason);
  a.addEventListener('abort', onAbort, { once: true });
  b.addEventListener('abort', onAbort, { once: true });
  return {
    signal: ctl.signal,
    dispose() {
      a.removeEventListener('abort', onAbort);
      b.removeEventListener('abort', onAbort);
    },
  };
}
