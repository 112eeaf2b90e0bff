const UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
};
const SIZE = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i;

/**
 * A byte count: a number, or text such as '256MiB', '512 KiB', '10MB' (decimal units) or '1024'.
 * Malformed or negative values give undefined; fractions of a byte are rounded down.
 */
export function parseByteSize(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? Math.floor(value) : undefined;
  if (typeof value !== 'string') return undefined;
  const m = SIZE.exec(value.trim());
  if (!m) return undefined;
  const unit = UNITS[(m[2] ?? '').toLowerCase()];
  if (unit === undefined) return undefined;
  const bytes = Math.floor(Number(m[1]) * unit);
  return Number.isFinite(bytes) ? bytes : undefined;
}
