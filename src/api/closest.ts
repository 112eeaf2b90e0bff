/**
 * "Did you mean …?" for unknown keys and names: case, `_` and `-` are ignored, then edit distance.
 * Shared by the configuration (keys, endpoint names) and the query checker (field names).
 */

function normalise(word: string): string {
  return word.toLowerCase().replace(/[_-]/g, '');
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/** The known word closest to `word`, if it is close enough to be a likely typo. */
export function closest(word: string, known: readonly string[]): string | undefined {
  const target = normalise(word);
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of known) {
    const distance = editDistance(target, normalise(candidate));
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  const allowed = Math.max(1, Math.min(3, Math.floor(target.length / 3)));
  return bestDistance <= allowed ? best : undefined;
}

/** '; did you mean "baseUrl"?' or ''. */
export function didYouMean(word: string, known: readonly string[]): string {
  const match = closest(word, known);
  return match === undefined ? '' : `; did you mean ${JSON.stringify(match)}?`;
}
