/**
 * The page worker thread (started by page-reducer.ts): parses and reduces the connector history's
 * large pages off the event loop, with the reduction of scan-reducers.ts and the rules it imports.
 * One set of reducers per worker, so per PageReducer: nothing is shared across the process.
 */
import { parentPort } from 'node:worker_threads';
import { createScanReducers } from './scan-reducers.js';
import type { WorkerRequest } from './page-reducer.js';

const reducers = createScanReducers();
const port = parentPort;
if (!port) throw new Error('page-worker.ts runs only as a worker thread');

port.on('message', (m: WorkerRequest & { id: number }) => {
  let result: unknown;
  try {
    if (m.op === 'begin') result = reducers.begin(m.scan, m.known);
    else if (m.op === 'page') result = reducers.page(m.scan, Buffer.from(m.bytes.buffer, m.bytes.byteOffset, m.bytes.byteLength).toString('utf8'));
    else if (m.op === 'finish') result = reducers.finish(m.scan);
    else if (m.op === 'peek') result = reducers.peek(m.scan);
    else result = reducers.drop(m.scan);
  } catch (err) {
    port.postMessage({ id: m.id, failed: String((err instanceof Error && err.message) || err).slice(0, 200) });
    return;
  }
  port.postMessage({ id: m.id, result });
});
