/**
 * Ctrl-C and SIGTERM during a backfill, from its first request on: the first asks for a clean stop
 * (the request in flight is dropped while reading, the window in flight finished while writing; the
 * command then says what was read and written and how to continue), a second one stops at once.
 */
export interface StopSignals {
  readonly signal: AbortSignal;
  /** The signal's name once one came. */
  readonly why: string | undefined;
  dispose(): void;
}

export function stopOnSignals(say: (text: string) => void, exit: (code: number) => void = (code) => process.exit(code)): StopSignals {
  const ctl = new AbortController();
  let why: string | undefined;
  const onSignal = (name: NodeJS.Signals) => {
    if (why !== undefined) {
      say(`${name} again: stopping at once`);
      exit(130);
      return;
    }
    why = name;
    say(`${name}: stopping cleanly (a second one stops at once)`);
    ctl.abort(new Error(`stopped by ${name}`));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    signal: ctl.signal,
    get why() {
      return why;
    },
    dispose() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}
