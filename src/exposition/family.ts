/**
 * The family model of the exposition: one metric family as every writer takes it, whatever made it
 * (the catalogue's families made from the store, the exporter's own prom-client instruments), and
 * what a format's writer module (text-format.ts, openmetrics-format.ts) provides.
 */

/** A family's name, type and HELP; `labels`, when given, is the order its labels are written in (the catalogue's). */
export interface FamilyMeta {
  readonly name: string;
  readonly type: string;
  readonly help: string;
  readonly labels?: readonly string[];
}

export interface FamilySeries {
  /** The sample's own name when it is not the family's: a histogram's `_bucket`, `_sum` and `_count`. */
  readonly name?: string;
  /** Without the family's label order, written in the order of this object (as prom-client does). */
  readonly labels: Readonly<Record<string, string | number>>;
  readonly value: number;
  /** The series' start (unix seconds): when its label set first counted; counters, histograms and summaries (start-times.ts). */
  readonly created?: number;
}

/** A catalogue family (or a prom-client one) and its series. */
export interface Family {
  readonly family: FamilyMeta;
  readonly series: readonly FamilySeries[];
}

/** A format of the exposition: what its writer module provides. */
export interface Format {
  /** The lines a family starts with (a data run's family, whose series the store keeps rendered). */
  header(family: FamilyMeta): string;
  /** Families in the order given, each its header and series; a family without series is left out. */
  write(families: readonly Family[]): string | Buffer;
  /** What the body ends with (OpenMetrics' `# EOF`). */
  readonly trailer?: string;
}
