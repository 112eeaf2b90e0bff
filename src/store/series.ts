/**
 * What the store shares with the layer that renders its series (src/exposition/): the series of a
 * poll as the store keeps them, and the renderer that turns them into bytes while the poll is being
 * applied, so that a poll is complete when what a scrape serves of it is made.
 */
import type { Sample } from '../metrics/sample.js';

/**
 * Samples handled between two yields: about 2 ms of label formatting on the bench machine, so that
 * a slice stays well under the 20 ms stall goal when the machine is busy (1,000 took 15–20 ms there).
 */
export const SLICE = 250;

/**
 * Samples with their label text (`{stack="…",…}`, formatted once, for de-duplication and output
 * alike), as two parallel arrays: the only object made per series is its label text. The samples
 * are the collector's own objects, kept as they are (no copy with `stack` added): every object made
 * per series outlives many turns of the event loop while a large poll is prepared, so the garbage
 * collector copies it from the young generation and then marks it in the old one, in pauses that
 * slicing cannot split.
 */
export interface Labelled {
  readonly samples: readonly Sample[];
  readonly texts: readonly string[];
}

/** An endpoint's series as bytes, per family, in pieces (the renderer's own form; the store only keeps them). */
export type SeriesLines = ReadonlyMap<string, readonly Buffer[]>;

export const NO_LINES: SeriesLines = new Map();

/** Renders an endpoint's series when they are swapped in (the exposition's text lines, src/exposition/text-lines.ts). */
export interface SeriesRenderer {
  /** The lines of `series`, made in slices: a generator that yields between them. */
  lines(series: Labelled): Generator<void, SeriesLines>;
  /** Byte for byte the same: a poll that brought the same series changes nothing that is served. */
  same(a: SeriesLines, b: SeriesLines): boolean;
}
