/**
 * A backfill given the daemon's --storage.path (src/backfill/borrowed-token.ts): it uses the
 * daemon's token while a daemon holds the folder, waits for the daemon to renew it after a 401,
 * asks for its own when no daemon holds the folder or the daemon does not renew in time, and goes
 * back to the daemon's once the daemon renews. The folder is stood in for by `look`.
 */
import { describe, expect, it } from 'vitest';
import { BorrowedToken, daemonWaitMs, POLL_MS } from '../../src/backfill/borrowed-token.js';
import type { Credential, TokenProvider } from '../../src/cmdb/auth.js';
import { CmdbAbortedError } from '../../src/errors.js';
import type { StackConfig } from '../../src/config/types.js';
import type { DaemonToken } from '../../src/persist/token-file.js';
import { SecretScrubber } from '../../src/secrets.js';
import { captureLog } from '../cmdb/helpers/log.js';
import { testStack } from '../cmdb/helpers/stack.js';

const DAEMON = { pid: 4211, host: 'host-a', startedAt: 1_800_000_000, command: 'daemon', token: 'x' };

/** The backfill's own provider: counts the tokens it fetches. */
class Own implements TokenProvider {
  readonly unauthorized = false;
  fetched = 0;
  private credential: Credential | undefined;
  current(): Promise<Credential> {
    this.credential ??= { token: `own-${++this.fetched}`, generation: this.fetched };
    return Promise.resolve(this.credential);
  }
  renew(): Promise<Credential> {
    this.credential = { token: `own-${++this.fetched}`, generation: this.fetched };
    return Promise.resolve(this.credential);
  }
  accepted(): void {}
  refused(): void {}
}

function setup(folder: { now: DaemonToken }, waitMs = 60_000) {
  const own = new Own();
  const log = captureLog('prod');
  const scrubber = new SecretScrubber();
  let clock = 0;
  const stack = testStack({ name: 'prod' });
  const borrowed = new BorrowedToken(own, {
    dir: '/nonexistent',
    stack,
    scrubber,
    logger: log.logger,
    waitMs,
    look: () => folder.now,
    now: () => clock,
    // Each look at the folder is a step of the daemon's time: it renews when the test says.
    sleep: async (ms) => {
      clock += ms;
      await Promise.resolve();
    },
  });
  return { own, borrowed, log, scrubber, advance: (ms: number) => (clock += ms) };
}

describe("a backfill given the daemon's --storage.path", () => {
  it("uses the daemon's token while a daemon holds the folder, and asks for none", async () => {
    const folder = { now: { daemon: DAEMON, token: 'daemon-1' } as DaemonToken };
    const { own, borrowed, scrubber } = setup(folder);
    expect((await borrowed.current()).token).toBe('daemon-1');
    expect(own.fetched).toBe(0);
    // Registered as a secret: no output shows it.
    expect(scrubber.scrub('Bearer daemon-1')).not.toContain('daemon-1');
  });

  it('on a 401 waits for the daemon to renew, then uses the new token; no token of its own', async () => {
    const folder = { now: { daemon: DAEMON, token: 'daemon-1' } as DaemonToken };
    const { own, borrowed } = setup(folder);
    const used = await borrowed.current();
    // The daemon's next poll meets the 401 and renews: after a few looks at the folder.
    let looks = 0;
    Object.defineProperty(folder, 'now', { get: () => ({ daemon: DAEMON, token: ++looks > 3 ? 'daemon-2' : 'daemon-1' }) });
    expect((await borrowed.renew(used))?.token).toBe('daemon-2');
    expect(looks).toBeGreaterThan(3);
    expect(own.fetched).toBe(0);
    // A second request that saw the same 401 gets the new token without waiting.
    expect((await borrowed.renew(used))?.token).toBe('daemon-2');
  });

  it('no daemon holding the folder: its own tokens, as without it; a daemon started later: the daemon\'s from its next 401', async () => {
    const folder = { now: { daemon: undefined } as DaemonToken };
    const { own, borrowed } = setup(folder);
    const mine = await borrowed.current();
    expect(mine.token).toBe('own-1');
    folder.now = { daemon: DAEMON, token: 'daemon-1' };
    // The daemon's first token ended the backfill's: the 401 goes over to the daemon's.
    expect((await borrowed.renew(mine))?.token).toBe('daemon-1');
    expect(own.fetched).toBe(1);
  });

  it("a daemon that does not renew in time: its own, said once; back to the daemon's when it renews", async () => {
    const folder = { now: { daemon: DAEMON, token: 'daemon-1' } as DaemonToken };
    const { own, borrowed, log } = setup(folder, 10 * POLL_MS);
    const used = await borrowed.current();
    const next = await borrowed.renew(used);
    expect(next?.token).toBe('own-1');
    expect(log.lines().filter((l) => /did not renew the stack's token in time/.test(String(l.msg)))).toHaveLength(1);
    expect(log.text()).not.toContain('daemon-1');
    // While the daemon's token stays the one that failed, the backfill renews its own.
    expect((await borrowed.renew(next as Credential))?.token).toBe('own-2');
    folder.now = { daemon: DAEMON, token: 'daemon-2' };
    expect((await borrowed.renew({ token: 'own-2', generation: 2 }))?.token).toBe('daemon-2');
    expect(own.fetched).toBe(2);
  });

  it('a token file that cannot be read: its own tokens, said once without the file\'s content', async () => {
    const folder = { now: { daemon: DAEMON, problem: 'cmdb-exporter.tokens.json is not whole' } as DaemonToken };
    const { own, borrowed, log } = setup(folder);
    expect((await borrowed.current()).token).toBe('own-1');
    await borrowed.current();
    expect(own.fetched).toBe(1);
    expect(log.lines().filter((l) => String(l.msg).includes('cannot be read'))).toHaveLength(1);
  });

  it('waits up to two of the shortest poll intervals, at least a minute', () => {
    const stack = (intervals: Record<string, number>) => ({ intervals }) as unknown as StackConfig;
    expect(daemonWaitMs(stack({ inventory: 10, license: 3600 }))).toBe(60_000);
    expect(daemonWaitMs(stack({ inventory: 120, license: 3600 }))).toBe(240_000);
  });

  it('a request stopped while it waits for the daemon ends as an aborted token request', async () => {
    const own = new Own();
    // A daemon that has no token yet, and a wait that only the stop ends.
    const borrowed = new BorrowedToken(own, {
      dir: '/nonexistent',
      stack: testStack({ name: 'prod' }),
      scrubber: new SecretScrubber(),
      logger: captureLog('prod').logger,
      waitMs: 60_000,
      look: () => ({ daemon: DAEMON }) as DaemonToken,
      sleep: () => new Promise<void>(() => undefined),
    });
    const stop = new AbortController();
    const waiting = borrowed.current(stop.signal);
    stop.abort();
    await expect(waiting).rejects.toBeInstanceOf(CmdbAbortedError);
    expect(own.fetched).toBe(0);
  });
});
