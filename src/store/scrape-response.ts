/**
 * The /metrics response as bytes made once per change, in both encodings, shared by every scrape.
 *
 * The body is the snapshot store's segments (data, status; made once per change) with two dynamic
 * parts: cmdb_license_days_until_expiry, in its place in catalogue order, and the exporter's own
 * prom-client metrics at the end. The dynamic parts are rendered together, at most `maxAgeMs` old
 * (default 1 s, see docs/design.md "Serving /metrics"), and again at once when the snapshot changed.
 * Until either part changes, every scrape gets the same Buffers: a plain body written as it is, and
 * a gzip body made of pieces compressed apart and joined into one gzip stream (see gzipOf). A piece
 * of the data segments is compressed once per change of its bytes (off the event loop, in libuv's
 * thread pool), and its CRC-32 computed once (crc32.ts, in slices), the small parts once per render;
 * the body's CRC-32 is combined from the pieces' CRCs. Nothing here copies or reads the whole body
 * in one turn of the event loop.
 */
import { promisify } from 'node:util';
import { constants, deflateRaw } from 'node:zlib';
import { PieceCrc } from './crc32.js';
import type { ExpositionSource, Segment } from './snapshot-store.js';

const deflateRawAsync = promisify(deflateRaw);
/** gzip header: deflate, no name or time, unknown OS (RFC 1952). */
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff]);
/** An empty final deflate block (fixed Huffman, end of block): ends the stream of flushed pieces. */
const FINAL_BLOCK = Buffer.from([0x03, 0x00]);

/**
 * One gzip stream from pieces compressed apart: each piece is a raw deflate stream ended with a sync
 * flush (byte-aligned, not final), so the pieces follow each other as one deflate stream; the
 * trailer holds the CRC-32 and length of the whole plain body. Browsers decode only the first of
 * several gzip members, so one stream it is.
 */
function gzipOf(pieces: readonly Buffer[], crc: number, length: number): Buffer[] {
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc >>> 0, 0);
  trailer.writeUInt32LE(length % 2 ** 32, 4);
  return [GZIP_HEADER, ...pieces, FINAL_BLOCK, trailer];
}
/** Measured on a 20 MiB exposition: level 3 compresses 2.6× faster than the default 6, 4 % larger. */
export const GZIP_LEVEL = 3;
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
  /** The same content as one gzip stream; made on first use, then shared. */
  gzip(): Promise<ScrapeBody>;
}

export interface ScrapeResponseOptions {
  /** The whole store, or one stack's view of it (SnapshotStore.view). */
  readonly store: ExpositionSource;
  /** The exporter's own metrics (prom-client's registry). */
  readonly selfMetrics: () => Promise<string>;
  /** The exporter's clock in unix seconds (cmdb_license_days_until_expiry, stale limits). */
  readonly now: () => number;
  readonly maxAgeMs?: number;
  /** Monotonic ms for the age of the dynamic parts (default performance.now). */
  readonly monotonicMs?: () => number;
  /**
   * The compressed pieces, shared with other responses made of the same Buffers (the whole
   * exposition and the per-stack ones): a piece is compressed once for all of them, one at a time.
   */
  readonly pieces?: GzipPieces;
}

interface Dynamic {
  readonly segments: readonly Segment[];
  readonly at: number;
  readonly days: Buffer;
  readonly self: Buffer;
}

/** Up to this size a body is also kept in one piece (see ScrapeBody.whole). */
export const WHOLE_MAX_BYTES = 1024 * 1024;

function body(parts: readonly Buffer[]): ScrapeBody {
  const kept = parts.filter((p) => p.length > 0);
  let whole: Buffer | undefined;
  const length = kept.reduce((n, p) => n + p.length, 0);
  return {
    parts: kept,
    length,
    whole: () => (length > WHOLE_MAX_BYTES ? undefined : (whole ??= kept.length === 1 ? (kept[0] as Buffer) : Buffer.concat(kept))),
  };
}

export class ScrapeResponses {
  private dynamic: Dynamic | null = null;
  private rendering: Promise<Dynamic> | null = null;
  private response: { dynamic: Dynamic; value: ScrapeResponse } | null = null;
  private readonly pieces: GzipPieces;
  private readonly maxAgeMs: number;
  private readonly monotonicMs: () => number;

  constructor(private readonly opts: ScrapeResponseOptions) {
    this.maxAgeMs = opts.maxAgeMs ?? SELF_METRICS_MAX_AGE_MS;
    this.monotonicMs = opts.monotonicMs ?? (() => performance.now());
    this.pieces = opts.pieces ?? new GzipPieces();
  }

  /** The response for a scrape now: every completed poll in it, self-metrics at most maxAgeMs old. */
  async current(): Promise<ScrapeResponse> {
    await this.opts.store.settled();
    const dynamic = await this.dynamicParts();
    if (this.response?.dynamic === dynamic) return this.response.value;
    const plain = body([...dynamic.segments.flatMap((s) => (s.kind === 'days' ? [dynamic.days] : s.parts)), dynamic.self]);
    let zipped: Promise<ScrapeBody> | undefined;
    const value: ScrapeResponse = { plain, gzip: () => (zipped ??= this.gzip(plain, dynamic)) };
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
    this.rendering = this.render(this.opts.store.segments());
    try {
      return (this.dynamic = await this.rendering);
    } finally {
      this.rendering = null;
    }
  }

  /** The dynamic parts last rendered, when made from the store's current segments and younger than maxAgeMs. */
  private stillCurrent(): Dynamic | undefined {
    const d = this.dynamic;
    const segments = this.opts.store.segments();
    return d && d.segments === segments && this.monotonicMs() - d.at < this.maxAgeMs ? d : undefined;
  }

  private async render(segments: readonly Segment[]): Promise<Dynamic> {
    const at = this.monotonicMs();
    const self = Buffer.from(await this.opts.selfMetrics(), 'utf8');
    const days = Buffer.from(this.opts.store.daysText(this.opts.now()), 'utf8');
    return { segments, at, days, self };
  }

  private async gzip(plain: ScrapeBody, dynamic: Dynamic): Promise<ScrapeBody> {
    const isDynamic = (part: Buffer) => part === dynamic.days || part === dynamic.self;
    const p = this.pieces;
    const [pieces, crc] = await Promise.all([
      Promise.all([
        ...dynamic.segments.map((s) => (s.kind === 'days' ? p.member(dynamic.days, true) : s.kind === 'data' ? p.runMember(s.parts) : p.joined(s.parts))),
        p.member(dynamic.self, true),
      ]),
      p.crcs.ofAll(plain.parts.map((piece) => ({ piece, cache: !isDynamic(piece) }))),
    ]);
    return body(gzipOf(pieces, crc, plain.length));
  }
}

/** The compressed pieces and CRC-32s of the store's Buffers, per Buffer; shareable between responses. */
export class GzipPieces {
  /** Compressed pieces of the store's segments, per Buffer: a piece is compressed once. */
  private readonly members = new WeakMap<Buffer, Promise<Buffer>>();
  /** The compressed pieces of a data run, joined, per parts array of the store's segments. */
  private readonly runs = new WeakMap<readonly Buffer[], Promise<Buffer>>();
  /** The piece compressed last: the next one starts when it is done. */
  private deflating: Promise<unknown> = Promise.resolve();
  /** CRC-32 of the pieces, per Buffer: a piece is read for it once. */
  readonly crcs = new PieceCrc();

  /**
   * The compressed pieces of a data run joined into one Buffer, once per run (the store keeps a run's
   * parts array until its data changes): a gzip response of a few parts, not hundreds. The joined
   * bytes are the compressed ones, about a twentieth of the plain run.
   */
  runMember(parts: readonly Buffer[]): Promise<Buffer> {
    let run = this.runs.get(parts);
    if (!run) {
      run = this.joined(parts);
      this.runs.set(parts, run);
    }
    return run;
  }

  async joined(parts: readonly Buffer[]): Promise<Buffer> {
    const members = await Promise.all(parts.map((p) => this.member(p, false)));
    return members.length === 1 ? (members[0] as Buffer) : Buffer.concat(members);
  }

  /** A part's compressed piece: the store's pieces are cached per Buffer, dynamic parts made per render. */
  member(part: Buffer, isDynamic: boolean): Promise<Buffer> {
    let member = isDynamic ? undefined : this.members.get(part);
    if (!member) {
      // One piece at a time: several compressing at once in the thread pool took the cores from the
      // event loop (blocks of 30-40 ms on a 2-core machine) and made the whole no sooner ready.
      member = this.deflating.then(() => deflateRawAsync(part, { level: GZIP_LEVEL, finishFlush: constants.Z_SYNC_FLUSH }));
      this.deflating = member.catch(() => undefined);
      if (!isDynamic) this.members.set(part, member);
    }
    return member;
  }
}
