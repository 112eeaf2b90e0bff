/**
 * Layered deep merge that remembers where each value came from, so that a problem found after
 * merging (a cross-field rule, an unreadable file) is reported at the key the user actually set:
 * `defaults.tls.caFile`, `stacks[2].timeoutSeconds` or `CMDB_CA_FILE`.
 */

/** Dotted key ('retries.max') → the path to report for it. */
export type Origin = (dottedKey: string) => string;

export interface Layer {
  readonly values: object | undefined;
  readonly origin: Origin;
}

export interface Merged<T> {
  readonly values: T;
  /** Where the value of each leaf came from. */
  readonly origins: ReadonlyMap<string, string>;
}

function isMapping(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function apply(
  target: Record<string, unknown>,
  source: Record<string, unknown>,
  prefix: string,
  origin: Origin,
  origins: Map<string, string>,
): void {
  for (const [key, value] of Object.entries(source)) {
    if (value === undefined) continue;
    const dotted = prefix === '' ? key : `${prefix}.${key}`;
    if (isMapping(value)) {
      const existing = target[key];
      const nested: Record<string, unknown> = isMapping(existing) ? { ...existing } : {};
      apply(nested, value, dotted, origin, origins);
      target[key] = nested;
    } else {
      // Lists replace the lower layer's list: a stack's `track.assets` is its own, not added to.
      target[key] = value;
      origins.set(dotted, origin(dotted));
    }
  }
}

/** Merge layers, lowest first. The caller vouches that the result has the shape `T`. */
export function mergeLayers<T>(layers: readonly Layer[]): Merged<T> {
  const values: Record<string, unknown> = {};
  const origins = new Map<string, string>();
  for (const layer of layers) {
    if (layer.values !== undefined) apply(values, layer.values as Record<string, unknown>, '', layer.origin, origins);
  }
  return { values: values as T, origins };
}
