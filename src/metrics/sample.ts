/** One series value produced by a collector. `stack` is added by the store, not by collectors. */
export type Labels = Readonly<Record<string, string>>;

export interface Sample {
  readonly name: string;
  readonly labels: Labels;
  readonly value: number;
}
