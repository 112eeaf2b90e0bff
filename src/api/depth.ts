/**
 * Bounds how deeply a parsed body nests. JSON.parse accepts any depth, but everything recursive
 * after it does not: JSON.stringify and the structured clone that carries rows back from the page
 * worker throw RangeError (or, for the clone, fail silently) on a few thousand levels. No CMDB body
 * nests deeper than a handful of levels, so whatever lies deeper than that is replaced with
 * null, which the tolerant schemas treat like any other wrong-typed value: that field of that
 * entity is absent, and nothing else is lost.
 */

/**
 * Replaces, in place, every object or array nested `max` or more levels below `value` with null (32:
 * far beyond any real body, far below what recursion survives); iterative, so any depth is safe.
 */
export function capDepth<T>(value: T, max = 32): T {
  if (value === null || typeof value !== 'object') return value;
  const stack: Array<[Record<string, unknown> | unknown[], number]> = [[value as Record<string, unknown>, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [Record<string, unknown> | unknown[], number];
    const keys = Array.isArray(node) ? null : Object.keys(node);
    const size = keys ? keys.length : (node as unknown[]).length;
    for (let i = 0; i < size; i++) {
      const key = keys ? keys[i] : i;
      const child = (node as Record<string | number, unknown>)[key as string];
      if (child === null || typeof child !== 'object') continue;
      if (depth + 1 >= max) (node as Record<string | number, unknown>)[key as string] = null;
      else stack.push([child as Record<string, unknown>, depth + 1]);
    }
  }
  return value;
}
