/**
 * The /metrics response as bytes made once per change, in both encodings, shared by every scrape
 * (docs/design.md, "Serving /metrics"): the exposition's segments with two dynamic parts,
 * cmdb_license_days_until_expiry in its place and the exporter's own metrics at the end, rendered
 * together at most `maxAgeMs` old and again at once when the segments changed; the gzip of a body
 * made off the event loop by its first gzip scrape (gzipParts). Nothing here copies the whole body
 * in one turn of the event loop, and nothing waits for the store.
 */
import { once } from 'node:events';
import { createGzip } from 'node:zlib';
import { toBuffer, type ExpositionSource, type Segment } from './exposition.js';
import type { Family, Format } from './family.js';
import { joinSmall } from './text-lines.js';
import { TEXT_FORMAT } from './text-format.js';

/** Measured on a 20 MiB exposition: level 3 compresses 2.6× faster than the default 6, 4 % larger. */
export const GZIP_LEVEL = 3;

/** The compression last started: the next one starts when it is done. */
let compressing: Promise<unknown> = Promise.resolve();

/**
 * About the bytes handed to zlib at once (parts joined by joinSmall). Each hand-over is a turn of the
 * event loop there and back, and a busy loop (a poll being applied) makes each turn wait: one per
 * 256 KiB part tripled the time a scrape waited for its gzip while polls ran. Joining parts up to
 * this size costs about a millisecond a copy.
 */
const BATCH_BYTES = 4 * 1024 * 1024;

/**
 * `parts` gzipped as one stream (one gzip member: browsers decode only the first), in libuv's
 * thread pool, a batch of parts at a time: the event loop never copies the whole of a large body
 * (~9 ms at 19 MiB) nor compresses any of it. One compression at a time in the process: several at
 * once in the thread pool take both cores of a small machine from the event loop.
 */
export function gzipParts(parts: readonly Buffer[]): Promise<Buffer> {
  const zipped = compressing.then(async () => {
    const length = parts.reduce((n, p) => n + p.length, 0);
    // Output in few chunks (each one more hand-over): a body compresses to well under an eighth.
    const zip = createGzip({ level: GZIP_LEVEL, chunkSize: Math.min(1024 * 1024, Math.max(16 * 1024, length >> 3)) });
    const chunks: Buffer[] = [];
    zip.on('data', (chunk: Buffer) => chunks.push(chunk));
    for (const batch of joinSmall(parts, BATCH_BYTES)) if (!zip.write(batch)) await once(zip, 'drain');
    zip.end();
    await once(zip, 'end');
    return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
  });
  compressing = zipped.catch(() => undefined);
  return zipped;
}

/** How old the exporter's own metrics may be when served (docs/performance.md). */
export const SELF_METRICS_MAX_AGE_MS = 1000;

export interface ScrapeBody {
  /** Written in this order; their total is the Content-Length. */
  readonly parts: readonly Buffer[];
  readonly length: number;
  /**
   * The parts in one Buffer, made on first use and shared, for bodies up to WHOLE_MAX_BYTES: one
   * write per response, as for a file. Larger bodies are written part by part: copying them once a
   * second (each time the self metrics are rendered) costs more than a writev of a few parts.
   */
  whole(): Buffer | undefined;
}

export interface ScrapeResponse {
  readonly plain: ScrapeBody;
  /**
   * The same content as one gzip stream: compressed on first use, then shared. A scrape that asks
   * while it is being compressed waits for it (a few ms in the thread pool, never the CMDB), so a
   * gzip body is always the whole of this plain body, never an older one.
   */
  gzip(): Promise<ScrapeBody>;
}

export interface ScrapeResponseOptions {
  /** The whole exposition, or one stack's view of it (Exposition.view). */
  readonly source: ExpositionSource;
  /** The exporter's own metrics (self-families.ts), written in the response's format after the source's. */
  readonly selfFamilies: () => Promise<readonly Family[]>;
  /** The format of the source's segments and of the response (default the text format 0.0.4). */
  readonly format?: Format;
  /** The exporter's clock in unix seconds (cmdb_license_days_until_expiry, stale limits). */
  readonly now: () => number;
  readonly maxAgeMs?: number;
  /** Monotonic ms for the age of the dynamic parts (default performance.now). */
  readonly monotonicMs?: () => number;
}

interface Dynamic {
  readonly segments: readonly Segment[];
  readonly at: number;
  readonly days: Buffer;
  readonly self: Buffer;
}

/** Up to this size a body is also kept in one piece (see ScrapeBody.whole). */
export const WHOLE_MAX_BYTES = 1024 * 1024;

export function body(parts: readonly Buffer[]): ScrapeBody {
  const kept = parts.filter((p) => p.length > 0);
  let whole: Buffer | undefined;
  const length = kept.reduce((n, p) => n + p.length, 0);
  return {
    parts: kept,
    length,
    whole: () => (length > WHOLE_MAX_BYTES ? undefined : (whole ??= kept.length === 1 ? (kept[0] as Buffer) : Buffer.concat(kept))),
  };
}

/** A response of `plain`, its gzip made on first use and shared. */
export function response(plain: ScrapeBody): ScrapeResponse {
  let zipped: Promise<ScrapeBody> | undefined;
  return { plain, gzip: () => (zipped ??= gzipParts(plain.parts).then((z) => body([z]))) };
}

export class ScrapeResponses {
  private dynamic: Dynamic | null = null;
  private rendering: Promise<Dynamic> | null = null;
  private response: { dynamic: Dynamic; value: ScrapeResponse } | null = null;
  private readonly format: Format;
  private readonly maxAgeMs: number;
  private readonly monotonicMs: () => number;
  /** What the body ends with (OpenMetrics' `# EOF`). */
  private readonly trailer: Buffer;

  constructor(private readonly opts: ScrapeResponseOptions) {
    this.maxAgeMs = opts.maxAgeMs ?? SELF_METRICS_MAX_AGE_MS;
    this.monotonicMs = opts.monotonicMs ?? (() => performance.now());
    this.format = opts.format ?? TEXT_FORMAT;
    this.trailer = Buffer.from(this.format.trailer ?? '', 'utf8');
  }

  /**
   * The response for a scrape now: every poll applied so far in it (a poll is complete once
   * applied; one still being applied is not waited for), self-metrics at most maxAgeMs old.
   */
  async current(): Promise<ScrapeResponse> {
    const dynamic = await this.dynamicParts();
    if (this.response?.dynamic === dynamic) return this.response.value;
    const plain = body([...dynamic.segments.flatMap((s) => (s.kind === 'days' ? [dynamic.days] : s.parts)), dynamic.self, this.trailer]);
    const value = response(plain);
    this.response = { dynamic, value };
    return value;
  }

  /**
   * The exporter's own metrics changed in a way a scrape should see at once (a reload's outcome):
   * the next scrape renders them again instead of serving them up to maxAgeMs old.
   */
  selfMetricsChanged(): void {
    this.dynamic = null;
  }

  private async dynamicParts(): Promise<Dynamic> {
    const kept = this.stillCurrent();
    if (kept) return kept;
    // One render at a time, shared by the scrapes that wait for it; checked again once it is done.
    while (this.rendering) await this.rendering;
    const again = this.stillCurrent();
    if (again) return again;
    this.rendering = this.render(this.opts.source.segments());
    try {
      return (this.dynamic = await this.rendering);
    } finally {
      this.rendering = null;
    }
  }

  /** The dynamic parts last rendered, when made from the source's current segments and younger than maxAgeMs. */
  private stillCurrent(): Dynamic | undefined {
    const d = this.dynamic;
    const segments = this.opts.source.segments();
    return d && d.segments === segments && this.monotonicMs() - d.at < this.maxAgeMs ? d : undefined;
  }

  private async render(segments: readonly Segment[]): Promise<Dynamic> {
    const at = this.monotonicMs();
    const self = toBuffer(this.format.write(await this.opts.selfFamilies()));
    const days = toBuffer(this.opts.source.daysText(this.opts.now()));
    return { segments, at, days, self };
  }
}
