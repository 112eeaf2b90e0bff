/**
 * `npm run bench:oversize`: peak RSS (VmHWM) of the exporter's CMDB client while it is sent a body
 * larger than maxResponseBytes (issue 11 #3), with and without a Content-Length, and for one body
 * just under the cap for comparison. Loopback only; one fresh process per case, so each VmHWM is that
 * case's alone; every case is bounded by a time limit.
 *
 *   npm run bench:oversize -- [--mb 300] [--cap-mb 256] [--seconds 120] [--json FILE]
 *
 * Prints a Markdown table and saves the figures as JSON (bench/results/, or --json FILE).
 */
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { BUILTIN_SETTINGS } from '../src/config/rules.js';
import { startChild } from './children.js';
import { saveFigures } from './format.js';
import { residentBytes } from './proc.js';
import { quietRoad, simulatorStack } from './stack.js';

const MB = 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 0x20);

interface Case {
  readonly name: string;
  readonly endpoint: 'actions' | 'license';
  readonly bytes: number;
  readonly chunked: boolean;
}

interface Figures {
  readonly case: string;
  readonly outcome: string;
  readonly baselineMb: number;
  readonly peakMb: number;
  readonly seconds: number;
}

/** VmHWM of this process in MiB: the peak resident set since it started. */
async function vmHwmMb(): Promise<number> {
  return ((await residentBytes(process.pid))?.hwm ?? 0) / 2 ** 20;
}

/** Serves `bytes` of spaces inside a JSON string, with or without a Content-Length; never holds the body. */
function serve(bytes: number, chunked: boolean): Promise<{ url: string; close: () => void }> {
  const server = createServer((req, res) => {
    req.resume();
    const head = Buffer.from('{"licenseType":"');
    const tail = Buffer.from('"}');
    res.writeHead(200, { 'Content-Type': 'application/json', ...(chunked ? {} : { 'Content-Length': String(bytes) }) });
    let left = bytes - head.length - tail.length;
    res.write(head);
    const pump = () => {
      while (left > 0) {
        const n = Math.min(left, CHUNK.length);
        left -= n;
        if (!res.write(n === CHUNK.length ? CHUNK : CHUNK.subarray(0, n))) return void res.once('drain', pump);
      }
      res.end(tail);
    };
    res.on('error', () => {});
    pump();
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({ url: `http://127.0.0.1:${port}`, close: () => server.close() });
    });
  });
}

/** The child: one request through the real client; prints its figures as one JSON line. */
async function child(url: string, name: string, endpoint: Case['endpoint'], capBytes: number, seconds: number): Promise<void> {
  const auth = { kind: 'token', token: 'bench-token' } as const;
  const stack = simulatorStack({ url, clientId: '', secret: '' }, { auth, maxResponseBytes: capBytes, timeoutSeconds: seconds, retries: { ...BUILTIN_SETTINGS.retries, max: 0 } });
  const road = quietRoad(stack, 'error');
  const baselineMb = await vmHwmMb();
  const started = performance.now();
  let outcome: string;
  try {
    await road.readers.get(endpoint);
    outcome = 'read';
  } catch (err) {
    outcome = (err as { outcome?: string }).outcome ?? String(err);
  }
  const figures: Figures = { case: name, outcome, baselineMb, peakMb: await vmHwmMb(), seconds: (performance.now() - started) / 1000 };
  process.stdout.write(`${JSON.stringify(figures)}\n`);
  await road.close();
}

async function runCase(c: Case, capBytes: number, seconds: number): Promise<Figures> {
  const server = await serve(c.bytes, c.chunked);
  try {
    // A fresh process per case, so that each VmHWM is that case's alone; its one line is its figures.
    const args = ['--child', server.url, '--case', c.name, '--endpoint', c.endpoint, '--cap', String(capBytes), '--seconds', String(seconds)];
    const child = await startChild('oversize.ts', args, { startTimeoutMs: (seconds + 30) * 1000 });
    await child.stop();
    return child.ready as Figures;
  } finally {
    server.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      child: { type: 'string' },
      case: { type: 'string' },
      endpoint: { type: 'string', default: 'actions' },
      cap: { type: 'string' },
      mb: { type: 'string', default: '300' },
      'cap-mb': { type: 'string', default: '256' },
      seconds: { type: 'string', default: '120' },
      json: { type: 'string' },
    },
  });
  const seconds = Number(values.seconds);
  if (values.child) return child(values.child, values.case ?? '', values.endpoint === 'license' ? 'license' : 'actions', Number(values.cap), seconds);
  const bytes = Number(values.mb) * MB;
  const cap = Number(values['cap-mb']) * MB;
  const under = Math.floor(cap * 0.9);
  const cases: Case[] = [
    { name: `actions, ${values.mb} MB, Content-Length`, endpoint: 'actions', bytes, chunked: false },
    { name: `actions, ${values.mb} MB, chunked`, endpoint: 'actions', bytes, chunked: true },
    { name: `license, ${values.mb} MB, chunked`, endpoint: 'license', bytes, chunked: true },
    { name: `actions, ${Math.round(under / MB)} MB (under the cap), chunked`, endpoint: 'actions', bytes: under, chunked: true },
  ];
  let commit = '';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    // Not a checkout: the table goes without a commit.
  }
  console.log(`cap ${values['cap-mb']} MiB; Node ${process.version}; commit ${commit}; ${new Date().toISOString()}`);
  console.log('| case | outcome | VmHWM before the request | VmHWM peak | time |');
  console.log('| --- | --- | ---: | ---: | ---: |');
  const figures: Figures[] = [];
  for (const c of cases) {
    const f = await runCase(c, cap, seconds);
    figures.push(f);
    console.log(`| ${f.case} | ${f.outcome} | ${f.baselineMb.toFixed(0)} MB | ${f.peakMb.toFixed(0)} MB | ${f.seconds.toFixed(2)} s |`);
  }
  saveFigures('oversize', { capBytes: cap, commit, cases: figures }, values.json);
}

await main();
