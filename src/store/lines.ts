/**
 * The pieces the snapshot store assembles the exposition from: an endpoint's series lines per
 * family, encoded once when its poll is swapped in, and the family headers. Work on a large sample
 * set is a generator that yields between slices, so that the store can spread it over several turns
 * of the event loop (or run it to the end at once when a caller needs the result synchronously).
 */
import type { MetricFamily } from '../metrics/catalogue.js';
import type { Sample } from '../metrics/sample.js';
import { escapeHelp, formatLabels, formatValue, type Series } from './exposition.js';

/** Samples handled between two yields: a few ms of label formatting on the bench machine. */
export const SLICE = 1000;

export interface Labelled {
  readonly sample: Sample;
  /** `{stack="…",…}`: formatted once, for de-duplication and output alike. */
  readonly text: string;
}

export function header(f: MetricFamily): string {
  return `# HELP ${f.name} ${escapeHelp(f.help)}\n# TYPE ${f.name} ${f.type}\n`;
}

const byText = (a: Labelled, b: Labelled) => (a.text < b.text ? -1 : a.text > b.text ? 1 : 0);

export function sortedByLabels(f: MetricFamily, series: Series[]): Series[] {
  const keyed = series.map((s) => ({ s, k: formatLabels(f.labels, s.labels) }));
  keyed.sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0));
  return keyed.map((x) => x.s);
}

/**
 * Sorts `list` by label text. A long list is sorted in runs of SLICE, one run per step, and the runs
 * merged pairwise, one merge per step, so no single step sorts more than a slice or merges more than
 * the list once.
 */
function* sortSliced(list: Labelled[]): Generator<void, Labelled[]> {
  if (list.length <= SLICE) return list.sort(byText);
  let runs: Labelled[][] = [];
  for (let i = 0; i < list.length; i += SLICE) {
    runs.push(list.slice(i, i + SLICE).sort(byText));
    yield;
  }
  while (runs.length > 1) {
    const next: Labelled[][] = [];
    for (let i = 0; i < runs.length; i += 2) {
      const a = runs[i] ?? [];
      const b = runs[i + 1];
      next.push(b ? merge(a, b) : a);
      yield;
    }
    runs = next;
  }
  return runs[0] ?? [];
}

function merge(a: Labelled[], b: Labelled[]): Labelled[] {
  const out: Labelled[] = new Array<Labelled>(a.length + b.length);
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length && j < b.length) out[k++] = byText(b[j] as Labelled, a[i] as Labelled) < 0 ? (b[j++] as Labelled) : (a[i++] as Labelled);
  while (i < a.length) out[k++] = a[i++] as Labelled;
  while (j < b.length) out[k++] = b[j++] as Labelled;
  return out;
}

/** Lines per family, sorted by label text so the output does not depend on response order; UTF-8. */
export function* renderLines(series: readonly Labelled[]): Generator<void, Map<string, Buffer>> {
  const byFamily = new Map<string, Labelled[]>();
  for (let i = 0; i < series.length; i++) {
    if (i > 0 && i % (SLICE * 10) === 0) yield;
    const s = series[i] as Labelled;
    let list = byFamily.get(s.sample.name);
    if (!list) byFamily.set(s.sample.name, (list = []));
    list.push(s);
  }
  yield;
  const out = new Map<string, Buffer>();
  for (const [name, unsorted] of byFamily) {
    const list = yield* sortSliced(unsorted);
    const chunks: Buffer[] = [];
    for (let i = 0; i < list.length; i += SLICE) {
      let text = '';
      for (let j = i; j < Math.min(list.length, i + SLICE); j++) {
        const s = list[j] as Labelled;
        text += `${name}${s.text} ${formatValue(s.sample.value)}\n`;
      }
      chunks.push(Buffer.from(text, 'utf8'));
      yield;
    }
    out.set(name, chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
  }
  return out;
}

/** Equal maps of equal bytes: a poll that brought the same series changes nothing that is served. */
export function sameLines(a: ReadonlyMap<string, Buffer>, b: ReadonlyMap<string, Buffer>): boolean {
  if (a.size !== b.size) return false;
  for (const [name, buf] of a) {
    const other = b.get(name);
    if (!other || !other.equals(buf)) return false;
  }
  return true;
}
