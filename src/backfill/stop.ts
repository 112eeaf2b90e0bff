/**
 * Ctrl-C, SIGTERM and SIGHUP during a backfill, from its first request on: the first asks for a
 * clean stop (the request in flight is dropped while reading, the window in flight finished while
 * writing; the command then says what was read and written and how to continue), a second one
 * stops at once. SIGHUP is a closed terminal or a dropped ssh session: stopped as cleanly, its
 * state kept, and what the terminal can no longer take (a write to it fails) does not stop the
 * clean stop; the line saying how to continue still reaches a log the output was piped to.
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
