/**
 * The responses of /metrics in every format a scraper may ask for (docs/formats.md): one cache entry
 * per format and encoding (responses.ts) for the whole /metrics, for each stack's target and for the
 * exporter alone. The text formats 0.0.4 and 1.0.0 are the same bytes (every name here is a legacy
 * name), so they share one entry; OpenMetrics has its own, made only once some scraper asked for
 * it, then once per change. No protobuf (docs/formats.md says why).
 */
import type { SelfRegistries } from '../metrics/instruments.js';
import type { SnapshotStore } from '../store/snapshot-store.js';
import { Exposition, toBuffer } from './exposition.js';
import type { Family, Format } from './family.js';
import { openMetricsFormat } from './openmetrics-format.js';
import { PerStackResponses } from './per-stack.js';
import { body, response, ScrapeResponses, type ScrapeResponse } from './responses.js';
import { registryFamilies, wholeSelfFamilies } from './self-families.js';
import { StartTimes } from './start-times.js';
import { TEXT_FORMAT } from './text-format.js';

/** What a response's bytes are: the text formats (0.0.4, 1.0.0), OpenMetrics (1.0.0, 0.0.1). */
export type BodyKind = 'text' | 'openmetrics';

/** Which part of the exposition a request asks for: all of it, one stack's target, the exporter's own metrics. */
export type Scope = { readonly kind: 'all' } | { readonly kind: 'stack'; readonly stack: string } | { readonly kind: 'exporter' };

export interface FormatsOptions {
  /** The text format's exposition (the one --once and the golden file read). */
  readonly exposition: Exposition;
  readonly registries: SelfRegistries;
  /** Unix seconds. */
  readonly now: () => number;
  /** OpenMetrics `_created` lines (--web.openmetrics-created). */
  readonly openMetricsCreated?: boolean;
  /** The series' starts (shared with the stacks, which forget a removed stack's); a new one on `now` when absent. */
  readonly starts?: StartTimes;
}

interface Served {
  readonly exposition: Exposition;
  readonly whole: ScrapeResponses;
  readonly perStack: PerStackResponses;
  readonly format: Format;
}

export class MetricsFormats {
  private readonly served = new Map<BodyKind, Served>();
  readonly starts: StartTimes;

  constructor(private readonly opts: FormatsOptions) {
    this.starts = opts.starts ?? new StartTimes(opts.now);
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

  /**
   * Only the families named (GET /metrics?name[]=…, as client_golang filters), of `scope`; made for
   * the one request from the bytes the formats keep, not cached. Undefined for a stack not polled.
   */
  async filtered(names: readonly string[], scope: Scope, kind: BodyKind = 'text'): Promise<ScrapeResponse | undefined> {
    const { exposition, format } = this.of(kind);
    const { registries, now } = this.opts;
    if (scope.kind === 'stack' && !exposition.store.hasStack(scope.stack)) return undefined;
    const wanted = new Set(names);
    const data = scope.kind === 'exporter' ? [] : exposition.filtered(wanted, now(), scope.kind === 'stack' ? scope.stack : undefined);
    const registry = scope.kind === 'stack' ? registries.stack(scope.stack) : scope.kind === 'exporter' ? registries.exporter : undefined;
    const all = registry ? await registryFamilies(registry) : scope.kind === 'all' ? await wholeSelfFamilies(registries) : [];
    const self = toBuffer(format.write(this.starts.annotate(all.filter((f) => wanted.has(f.family.name)))));
    return response(body([...data, self, Buffer.from(format.trailer ?? '', 'utf8')]));
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
    const format: Format = kind === 'text' ? TEXT_FORMAT : openMetricsFormat({ created: this.opts.openMetricsCreated === true });
    const exposition = kind === 'text' ? this.opts.exposition : new Exposition(store, format, { lazy: true });
    // The text format carries no start; reading the families still notes the starts of new series.
    const annotate = (families: readonly Family[], scope: string) => this.starts.annotate(families, scope);
    const whole = new ScrapeResponses({ source: exposition, selfFamilies: async () => annotate(await wholeSelfFamilies(registries), 'all'), format, now });
    const perStack = new PerStackResponses({ exposition, registries, now, format, annotate });
    return { exposition, whole, perStack, format };
  }
}
