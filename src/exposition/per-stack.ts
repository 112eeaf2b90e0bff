/**
 * One scrape target per stack (GET /metrics?stack=NAME) and the exporter's own metrics alone
 * (GET /metrics?only=exporter), made like the whole exposition (responses.ts); together they hold
 * every series of the whole /metrics, each once (docs/scaling.md, "Per-stack targets and service
 * discovery"). A stack's own counters come from its own registry (src/metrics/instruments.ts), never
 * read back out of a label in the text. Each response renders its self metrics at most every
 * SPLIT_MAX_AGE_MS: the targets of a fleet are scraped all the time, and a stack's counters a few
 * seconds old change no alert.
 */
import type { SelfRegistries } from '../metrics/instruments.js';
import type { Exposition, ExpositionSource } from './exposition.js';
import type { Family } from './family.js';
import { ScrapeResponses, type ScrapeResponse, type ScrapeResponseOptions } from './responses.js';
import { registryFamilies } from './self-families.js';

export const SPLIT_MAX_AGE_MS = 5000;

/** The responses' clocks and format (the exposition's own), as ScrapeResponses takes them. */
export interface PerStackOptions extends Pick<ScrapeResponseOptions, 'now' | 'monotonicMs' | 'format'> {
  readonly exposition: Exposition;
  /** Where the exporter's own metrics live: each stack's registry, and the exporter's (no `stack` label). */
  readonly registries: SelfRegistries;
  /** Notes each started series' start on the exporter's families of a scope (start-times.ts). */
  readonly annotate?: (families: readonly Family[], scope: string) => readonly Family[];
}

const NOTHING: ExpositionSource = { segments: () => [], daysText: () => '' };
const NO_FAMILIES: readonly Family[] = [];

export class PerStackResponses {
  private readonly responses = new Map<string, ScrapeResponses>();
  private exporterResponses: ScrapeResponses | undefined;
  private readonly monotonicMs: () => number;

  constructor(private readonly opts: PerStackOptions) {
    this.monotonicMs = opts.monotonicMs ?? (() => performance.now());
  }

  /** The response of `stack`, or undefined when this exporter does not poll it. */
  stack(stack: string): Promise<ScrapeResponse> | undefined {
    const { exposition, registries } = this.opts;
    const store = exposition.store;
    if (!store.hasStack(stack)) {
      this.responses.delete(stack);
      return undefined;
    }
    if (this.responses.size > store.stackNames().length) {
      for (const name of this.responses.keys()) if (!store.hasStack(name)) this.responses.delete(name);
    }
    let responses = this.responses.get(stack);
    if (!responses) {
      responses = this.make(exposition.view(stack), async () => {
        const registry = registries.stack(stack);
        return registry ? this.annotate(await registryFamilies(registry), `stack:${stack}`) : NO_FAMILIES;
      });
      this.responses.set(stack, responses);
    }
    return responses.current();
  }

  /** The exporter's own metrics without a `stack` label. */
  exporter(): Promise<ScrapeResponse> {
    this.exporterResponses ??= this.make(NOTHING, async () => this.annotate(await registryFamilies(this.opts.registries.exporter), 'exporter'));
    return this.exporterResponses.current();
  }

  /** A reload's outcome shows on the next scrape (as on the whole /metrics). */
  selfMetricsChanged(): void {
    this.exporterResponses?.selfMetricsChanged();
    for (const r of this.responses.values()) r.selfMetricsChanged();
  }

  private annotate(families: readonly Family[], scope: string): readonly Family[] {
    return this.opts.annotate ? this.opts.annotate(families, scope) : families;
  }

  private make(source: ExpositionSource, selfFamilies: () => Promise<readonly Family[]>): ScrapeResponses {
    const { now, format } = this.opts;
    return new ScrapeResponses({ source, selfFamilies, now, maxAgeMs: SPLIT_MAX_AGE_MS, monotonicMs: this.monotonicMs, ...(format ? { format } : {}) });
  }
}
