/**
 * The first step of swapping a poll's series in: duplicate label sets dropped (first wins), each
 * series' label text formatted once, for de-duplication here and for the rendered lines after.
 */
import { family } from '../metrics/catalogue.js';
import type { Sample } from '../metrics/sample.js';
import { formatLabels } from '../metrics/series-text.js';
import { SLICE } from './series.js';

/**
 * `samples` without duplicate label sets (`kept`: the collector's own objects, see Labelled) and
 * their label texts with `stack` added; yields every SLICE samples.
 */
export function* deduplicate(stack: string, samples: readonly Sample[]): Generator<void, { kept: Sample[]; texts: string[]; duplicates: number }> {
  // De-duplication per family by label text: no key string made per series.
  const seen = new Map<string, Set<string>>();
  const kept: Sample[] = [];
  const texts: string[] = [];
  let duplicates = 0;
  for (let i = 0; i < samples.length; i++) {
    if (i > 0 && i % SLICE === 0) yield;
    const s = samples[i] as Sample;
    const text = formatLabels(family(s.name).labels, { stack, ...s.labels });
    let inFamily = seen.get(s.name);
    if (!inFamily) seen.set(s.name, (inFamily = new Set()));
    if (inFamily.has(text)) {
      duplicates++;
      continue;
    }
    inFamily.add(text);
    kept.push(s);
    texts.push(text);
  }
  return { kept, texts, duplicates };
}
