/**
 * A child process for tests of what start() leaves when it fails (src/app.ts): it watches every
 * timer, worker thread, socket and server made from here on (async_hooks: unref'd ones too, which
 * process.getActiveResourcesInfo() does not list), calls start() with the configuration of the JSON
 * file named by its argument, and prints one JSON line: how start() ended (the error's code and
 * message) and what it made that is still open. Then it does nothing more.
 */
import { createHook } from 'node:async_hooks';
import { readFileSync } from 'node:fs';
import { start } from '../../src/app.js';
import type { ExporterConfig } from '../../src/config/types.js';
import { createLogger } from '../../src/logger.js';
import { SecretScrubber } from '../../src/secrets.js';

// What keeps running by itself. Not file handles: a closed one is told destroyed only when it is
// collected, so one read at start (a state file) may still be listed although it is closed.
const WATCHED = new Set(['Timeout', 'WORKER', 'TCPWRAP', 'TCPSERVERWRAP', 'FSEVENTWRAP', 'PROCESSWRAP']);
const open = new Map<number, string>();
createHook({
  init: (id, type) => void (WATCHED.has(type) && open.set(id, type)),
  destroy: (id) => void open.delete(id),
}).enable();

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
const config = JSON.parse(readFileSync(process.argv[2] as string, 'utf8')) as ExporterConfig;
let outcome: Record<string, unknown>;
try {
  const app = await start({ config, logger: createLogger({ level: 'silent', format: 'json', scrubber: new SecretScrubber() }), initialJitterMs: 0, defaultMetrics: false });
  outcome = { started: true };
  await app.close(0);
} catch (err) {
  outcome = { started: false, code: (err as NodeJS.ErrnoException).code, message: (err as Error).message };
}
// Closes complete in the turns after (a socket's, a worker's): a few turns, no clock.
for (let i = 0; i < 20; i++) await turn();
process.stdout.write(`${JSON.stringify({ ...outcome, open: [...open.values()].sort() })}\n`);
