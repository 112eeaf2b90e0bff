/**
 * A stable offset in [0, interval) seconds derived from a name (FNV-1a), so that jobs and
 * refreshes are spread out but land at the same place on every start.
 */
export function spreadOffset(name: string, intervalSeconds: number): number {
  let h = 2166136261;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
  return (h >>> 0) % Math.max(1, Math.floor(intervalSeconds));
}
