/**
 * The responses of /metrics in every format a scraper may ask for: one exposition, one cache entry
 * per format and encoding (responses.ts) for the whole /metrics, for each stack's target and for the
 * exporter alone. The text formats 0.0.4 and 1.0.0 are the same bytes (every name here is a legacy
 * name), so they share one entry; OpenMetrics and protobuf have theirs, made only once some scraper
 * asked for them, then once per change.
 */
import type { SelfRegistries } from '../metrics/instruments.js';
import type { SnapshotStore } from '../store/snapshot-store.js';
import { Exposition } from './exposition.js';
import type { Family, Format } from './family.js';
import { GzipPieces } from './gzip-pieces.js';
import { openMetricsFormat } from './openmetrics-format.js';
import { PerStackResponses } from './per-stack.js';
import { protobufData } from './protobuf-data.js';
import { PROTOBUF_FORMAT } from './protobuf-format.js';
import { ScrapeResponses, type ScrapeResponse } from './responses.js';
import { wholeSelfFamilies } from './self-families.js';
import { StartTimes } from './start-times.js';
import { TEXT_FORMAT } from './text-format.js';

/** What a response's bytes are: the text formats (0.0.4, 1.0.0), OpenMetrics (1.0.0, 0.0.1), protobuf delimited. */
export type BodyKind = 'text' | 'openmetrics' | 'protobuf';

export interface FormatsOptions {
  /** The text format's exposition (the one --once and the golden file read). */
  readonly exposition: Exposition;
  readonly registries: SelfRegistries;
  /** Unix seconds. */
  readonly now: () => number;
  /** OpenMetrics `_created` lines (--web.openmetrics-created). */
  readonly openMetricsCreated?: boolean;
}

interface Served {
  readonly exposition: Exposition;
  readonly whole: ScrapeResponses;
  readonly perStack: PerStackResponses;
}

export class MetricsFormats {
  private readonly served = new Map<BodyKind, Served>();
  /** Shared by every format's responses: a Buffer common to two of them is compressed once. */
  private readonly pieces = new GzipPieces();
  readonly starts: StartTimes;

  constructor(private readonly opts: FormatsOptions) {
    this.starts = new StartTimes(opts.now);
  }

  /** The whole /metrics in `kind`. */
  whole(kind: BodyKind = 'text'): Promise<ScrapeResponse> {
    return this.of(kind).whole.current();
  }

  /** One stack's target; undefined when this exporter does not poll it. */
  stack(name: string, kind: BodyKind = 'text'): Promise<ScrapeResponse> | undefined {
    return this.of(kind).perStack.stack(name);
  }

  /** The exporter's own metrics alone. */
  exporter(kind: BodyKind = 'text'): Promise<ScrapeResponse> {
    return this.of(kind).perStack.exporter();
  }

  /** A reload's outcome shows on the next scrape, in every format. */
  selfMetricsChanged(): void {
    for (const s of this.served.values()) {
      s.whole.selfMetricsChanged();
      s.perStack.selfMetricsChanged();
    }
  }

  close(): void {
    for (const [kind, s] of this.served) if (kind !== 'text') s.exposition.close();
  }

  private of(kind: BodyKind): Served {
    let served = this.served.get(kind);
    if (!served) this.served.set(kind, (served = this.make(kind)));
    return served;
  }

  private make(kind: BodyKind): Served {
    const { registries, now } = this.opts;
    const store: SnapshotStore = this.opts.exposition.store;
    const format: Format = kind === 'text' ? TEXT_FORMAT : kind === 'openmetrics' ? openMetricsFormat({ created: this.opts.openMetricsCreated === true }) : PROTOBUF_FORMAT;
    const exposition =
      kind === 'text' ? this.opts.exposition : new Exposition(store, format, { lazy: true, ...(kind === 'protobuf' ? { data: protobufData() } : {}) });
    // The text format carries no start; reading the families still notes the starts of new series.
    const annotate = (families: readonly Family[]) => this.starts.annotate(families);
    const whole = new ScrapeResponses({ source: exposition, selfFamilies: async () => annotate(await wholeSelfFamilies(registries)), format, now, pieces: this.pieces });
    const perStack = new PerStackResponses({ exposition, registries, now, pieces: this.pieces, format, annotate });
    return { exposition, whole, perStack };
  }
}
