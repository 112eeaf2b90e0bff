/**
 * Ctrl-C, SIGTERM and SIGHUP during a backfill, from its first request on (docs/backfill.md,
 * "Stoppable and resumable"): the first asks for a clean stop, a second one stops at once. After a
 * SIGHUP the terminal may be gone: a failed write to it does not stop the clean stop, and the line
 * saying how to continue still reaches a log the output was piped to.
 */
export interface StopSignals {
  readonly signal: AbortSignal;
  /** The signal's name once one came. */
  readonly why: string | undefined;
  dispose(): void;
}

const SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** After a hang-up the terminal may be gone: a failed write to it is dropped, not thrown. */
function ignoreClosedTerminal(): void {
  for (const stream of [process.stdout, process.stderr]) if (stream.listenerCount('error') === 0) stream.on('error', () => undefined);
}

export function stopOnSignals(say: (text: string) => void): StopSignals {
  const ctl = new AbortController();
  let why: string | undefined;
  const onSignal = (name: NodeJS.Signals) => {
    if (name === 'SIGHUP') ignoreClosedTerminal();
    if (why !== undefined) {
      say(`${name} again: stopping at once`);
      process.exit(130);
    }
    why = name;
    say(`${name}: stopping cleanly (a second one stops at once)`);
    ctl.abort(new Error(`stopped by ${name}`));
  };
  for (const s of SIGNALS) process.on(s, onSignal);
  return {
    signal: ctl.signal,
    get why() {
      return why;
    },
    dispose() {
      for (const s of SIGNALS) process.off(s, onSignal);
    },
  };
}
