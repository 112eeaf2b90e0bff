/**
 * Setup file of every vitest run (vitest.config.ts, vitest.faults.config.ts): a test during which
 * Node warns of a listener leak (MaxListenersExceededWarning) fails, naming it. Eleven listeners on
 * one signal or emitter is how a leak starts; it is fixed where the listeners are added (see
 * src/signals.ts followAbort), not by raising the limit.
 */
import { afterEach } from 'vitest';

interface Seen {
  warnings: string[];
}

const KEY = Symbol.for('cmdb-exporter.test.leak-warnings');
const holder = globalThis as { [KEY]?: Seen };
// One listener per worker process, however many test files it runs.
const seen: Seen =
  holder[KEY] ??
  (() => {
    const created: Seen = { warnings: [] };
    process.on('warning', (w) => {
      if (w.name === 'MaxListenersExceededWarning') created.warnings.push(w.message);
    });
    holder[KEY] = created;
    return created;
  })();

afterEach(async () => {
  // Node emits the warning on the next tick after the listener that passed the limit.
  await new Promise((resolve) => setImmediate(resolve));
  const found = seen.warnings.splice(0);
  if (found.length > 0) throw new Error(`MaxListenersExceededWarning during this test (${found.length}×): ${found[0]}`);
});
