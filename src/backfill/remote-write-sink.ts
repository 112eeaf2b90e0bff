/**
 * The remote-write sink: a window's samples grouped by series (so a request carries each series
 * once with many samples), cut into chunks per unit and packed into requests of at most
 * `maxSamplesPerSend` samples, sent a few at a time. Each chunk is named (`stack:unit#n`) and kept
 * in the state as soon as the target takes it: a stop in the middle of a window sends none of those
 * again, whatever else the next run writes into the window.
 */
import { WRITTEN_FAMILIES } from './coverage.js';
import type { Line } from './replay.js';
import { RemoteWriteError, type RemoteWriteClient } from './remote-write.js';
import { encodeLabels, writeRequestBody, type SeriesSamples } from './write-request.js';
import { sourceOf, type PassOptions, type Sink, type SinkWindow } from './write.js';

/** Requests in flight at once: enough to keep a receiver busy while the next is encoded. */
export const REMOTE_WRITE_CONCURRENCY = 4;

interface SeriesBuffer {
  readonly labels: Buffer;
  readonly source: string;
  readonly timestamps: number[];
  readonly values: number[];
}

interface Chunk {
  readonly id: string;
  readonly parts: SeriesSamples[];
  readonly samples: number;
}

/** The chunks of one window: per unit (sorted), its series in order, cut every `max` samples. */
export function chunksOf(series: Iterable<SeriesBuffer>, max: number): Chunk[] {
  const bySource = new Map<string, SeriesBuffer[]>();
  for (const s of series) {
    const list = bySource.get(s.source);
    if (list) list.push(s);
    else bySource.set(s.source, [s]);
  }
  const chunks: Chunk[] = [];
  for (const source of [...bySource.keys()].sort()) {
    let parts: SeriesSamples[] = [];
    let samples = 0;
    let n = 0;
    const cut = () => {
      if (samples === 0) return;
      chunks.push({ id: `${source}#${n++}`, parts, samples });
      parts = [];
      samples = 0;
    };
    for (const s of bySource.get(source) as SeriesBuffer[]) {
      for (let start = 0; start < s.timestamps.length; ) {
        const take = Math.min(max - samples, s.timestamps.length - start);
        parts.push({ labels: s.labels, timestamps: s.timestamps, values: s.values, start, end: start + take });
        samples += take;
        start += take;
        if (samples >= max) cut();
      }
    }
    cut();
  }
  return chunks;
}

/** Chunks packed into requests of at most `max` samples, in order. */
export function packChunks(chunks: readonly Chunk[], max: number): Chunk[][] {
  const batches: Chunk[][] = [];
  let batch: Chunk[] = [];
  let samples = 0;
  for (const c of chunks) {
    if (samples + c.samples > max && batch.length > 0) {
      batches.push(batch);
      batch = [];
      samples = 0;
    }
    batch.push(c);
    samples += c.samples;
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

export class RemoteWriteSink implements Sink {
  readonly kind = 'remote write' as const;
  requests = 0;
  retries = 0;
  bytes = 0;
  private readonly labels = new Map<string, Buffer>();
  private readonly queue: Array<() => void> = [];
  private running = 0;
  private readonly idle = new Set<() => void>();
  private readonly stop = new AbortController();
  private failure: Error | undefined;

  constructor(
    private readonly client: RemoteWriteClient,
    private readonly concurrency = REMOTE_WRITE_CONCURRENCY,
  ) {}

  private labelsOf(line: Line): Buffer {
    let encoded = this.labels.get(line.key);
    if (!encoded) {
      encoded = encodeLabels({ ...line.labels, __name__: (WRITTEN_FAMILIES[line.family] as { name: string }).name });
      this.labels.set(line.key, encoded);
    }
    return encoded;
  }

  open(_start: number, pass: PassOptions): SinkWindow {
    let series = new Map<string, SeriesBuffer>();
    return {
      add: (line, stack, t) => {
        let s = series.get(line.key);
        if (!s) {
          s = { labels: this.labelsOf(line), source: sourceOf(stack, line), timestamps: [], values: [] };
          series.set(line.key, s);
        }
        s.timestamps.push(t * 1000);
        s.values.push(line.value);
      },
      discard: () => {
        series = new Map();
      },
      finish: async () => {
        const max = this.client.settings.maxSamplesPerSend;
        const chunks = chunksOf(series.values(), max).filter((c) => !pass.skipChunks.has(c.id));
        series = new Map();
        const batches = packChunks(chunks, max);
        const samples = chunks.reduce((n, c) => n + c.samples, 0);
        const safe = Promise.all(batches.map((batch) => this.enqueue(() => this.send(batch, pass)))).then(() => undefined);
        return { samples, bytes: 0, safe };
      },
    };
  }

  private async send(batch: readonly Chunk[], pass: PassOptions): Promise<void> {
    if (this.failure) throw this.failure;
    if (this.stop.signal.aborted) throw new RemoteWriteError('stopped before this batch was sent');
    const body = writeRequestBody(batch.flatMap((c) => c.parts));
    try {
      const attempts = await this.client.send(body, this.stop.signal);
      this.requests += 1;
      this.retries += attempts - 1;
      this.bytes += body.length;
    } catch (e) {
      // The first failure stops the rest: the target refused, or cannot be reached.
      if (!this.stop.signal.aborted) this.failure ??= e as Error;
      throw e;
    }
    pass.acked(
      batch.map((c) => c.id),
      batch.reduce((n, c) => n + c.samples, 0),
    );
  }

  /** Runs `task` when fewer than `concurrency` are running. */
  private enqueue(task: () => Promise<void>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const run = () => {
        this.running += 1;
        task()
          .then(resolve, reject)
          .finally(() => {
            this.running -= 1;
            this.queue.shift()?.();
            if (this.running === 0) for (const done of this.idle) done();
          });
      };
      if (this.running < this.concurrency) run();
      else this.queue.push(run);
    });
  }

  private closing: Promise<void> | undefined;

  /** Safe to call twice: the second waits for the first. */
  close(stopping: boolean): Promise<void> {
    // A stop: requests in flight end (their chunks are kept when taken); the queued ones are not sent.
    if (stopping) this.stop.abort();
    this.closing ??= this.drain();
    return this.closing;
  }

  private async drain(): Promise<void> {
    while (this.running > 0 || this.queue.length > 0) {
      await new Promise<void>((resolve) => {
        const done = () => {
          this.idle.delete(done);
          resolve();
        };
        this.idle.add(done);
      });
    }
    await this.client.close();
  }
}
