/**
 * The remote-write sink, sharded by series as Prometheus' queue manager is (docs/backfill.md, "What
 * a receiver gets"): a series belongs to one shard (a hash of its labels), and a shard sends one
 * request at a time, retries included, so no series is sent out of time order. A window's samples
 * are cut per shard into chunks per unit (`stack:unit#shard.n`), packed into requests of at most
 * `maxSamplesPerSend`; the state keeps each chunk the target took, so a stop sends none twice.
 */
import { WRITTEN_FAMILIES } from './coverage.js';
import type { Line } from './replay.js';
import { RemoteWriteError, type RemoteWriteClient } from './remote-write.js';
import { encodeLabels, writeRequestBody, type SeriesSamples } from './write-request.js';
import { sourceOf, type PassOptions, type Sink, type SinkWindow } from './write.js';

/** Shards, each with one request in flight: enough to keep a receiver busy while the next is encoded. */
export const REMOTE_WRITE_SHARDS = 4;

/** FNV-1a (32 bits) of a series' encoded labels: which shard it belongs to, the same in every run. */
export function shardOf(labels: Buffer, shards: number): number {
  let h = 0x811c9dc5;
  for (const byte of labels) h = Math.imul(h ^ byte, 0x01000193) >>> 0;
  return h % shards;
}

interface SeriesBuffer {
  readonly labels: Buffer;
  readonly shard: number;
  readonly source: string;
  readonly timestamps: number[];
  readonly values: number[];
}

interface Chunk {
  readonly id: string;
  readonly parts: SeriesSamples[];
  readonly samples: number;
}

/** The chunks of one shard of a window: per unit (sorted), its series in order, cut every `max` samples. */
export function chunksOf(series: Iterable<SeriesBuffer>, max: number, shard = 0): Chunk[] {
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
      chunks.push({ id: `${source}#${shard}.${n++}`, parts, samples });
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
  private readonly labels = new Map<string, { labels: Buffer; shard: number }>();
  /** Per shard, the end of its queue: the next request waits for it. */
  private readonly tails: Array<Promise<void>>;
  private readonly stop = new AbortController();
  private failure: Error | undefined;

  constructor(private readonly client: RemoteWriteClient) {
    this.tails = Array.from({ length: REMOTE_WRITE_SHARDS }, () => Promise.resolve());
  }

  private seriesOf(line: Line): { labels: Buffer; shard: number } {
    let known = this.labels.get(line.key);
    if (!known) {
      const labels = encodeLabels({ ...line.labels, __name__: (WRITTEN_FAMILIES[line.family] as { name: string }).name });
      known = { labels, shard: shardOf(labels, REMOTE_WRITE_SHARDS) };
      this.labels.set(line.key, known);
    }
    return known;
  }

  open(_start: number, pass: PassOptions): SinkWindow {
    let series = new Map<string, SeriesBuffer>();
    return {
      add: (line, stack, t) => {
        let s = series.get(line.key);
        if (!s) {
          s = { ...this.seriesOf(line), source: sourceOf(stack, line), timestamps: [], values: [] };
          series.set(line.key, s);
        }
        s.timestamps.push(Math.round(t * 1000));
        s.values.push(line.value);
      },
      discard: () => {
        series = new Map();
      },
      finish: async () => {
        const max = this.client.settings.maxSamplesPerSend;
        const byShard: SeriesBuffer[][] = Array.from({ length: REMOTE_WRITE_SHARDS }, () => []);
        for (const s of series.values()) byShard[s.shard]?.push(s);
        series = new Map();
        let samples = 0;
        const sent: Array<Promise<void>> = [];
        byShard.forEach((list, shard) => {
          const chunks = chunksOf(list, max, shard).filter((c) => !pass.skipChunks.has(c.id));
          samples += chunks.reduce((n, c) => n + c.samples, 0);
          for (const batch of packChunks(chunks, max)) sent.push(this.enqueue(shard, () => this.send(batch, pass)));
        });
        return { samples, bytes: 0, safe: Promise.all(sent).then(() => undefined) };
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

  /** Runs `task` once every task queued before it on `shard` has ended: one request of a shard at a time, in order. */
  private enqueue(shard: number, task: () => Promise<void>): Promise<void> {
    const run = (this.tails[shard] as Promise<void>).then(task);
    this.tails[shard] = run.catch(() => undefined);
    return run;
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
    // Tasks queued while waiting (none once the writer closes) would extend a tail: wait until none moves.
    for (let before: Array<Promise<void>> = []; before.length !== this.tails.length || before.some((t, i) => t !== this.tails[i]); ) {
      before = [...this.tails];
      await Promise.all(before);
    }
    await this.client.close();
  }
}
