/**
 * The worked example queries of config/exporter.example.yaml (its first stack), and a brute-force
 * count of each over the simulator's records, written out by hand from what each query means: the
 * exporter must export exactly these counts, whatever path its requests take.
 */
import { exampleQueries } from '../../bench/queries-run.js';
import type { DataRecord, Records } from '../../src/simulator/data/records.js';

export { exampleQueries };

const DAY_MS = 86_400_000;
const at = (text: unknown): number => Date.parse(`${String(text).replace(' ', 'T')}Z`);

/** Each example query's meaning, record by record; `nowMs` is the exporter's clock (relative days are its days, UTC). */
const MEANING: Record<string, { table: 'asset' | 'user'; test: (r: DataRecord, nowMs: number) => boolean }> = {
  'servers-without-edr': { table: 'asset', test: (r) => r.EP_Not_Installed === true && r.Asset_Type === 'Server' },
  'assets-not-seen-30d': { table: 'asset', test: (r, now) => at(r.Last_Discovered_Datetime) < Math.floor(now / DAY_MS) * DAY_MS - 30 * DAY_MS },
  'public-assets-open-ports': { table: 'asset', test: (r) => r.Is_Public === true && Array.isArray(r.EXT_Open_Ports) && r.EXT_Open_Ports.length > 0 },
  'high-risk-users': { table: 'user', test: (r) => typeof r.Risk_Score === 'number' && r.Risk_Score >= 80 },
};

/** The count of every example query over `records`, by a loop over every record. */
export function bruteForceCounts(records: Records, nowMs: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const q of exampleQueries()) {
    const meaning = MEANING[q.name];
    if (!meaning) throw new Error(`no brute-force meaning for the example query ${q.name}`);
    out[q.name] = records[meaning.table].records().filter((r) => meaning.test(r, nowMs)).length;
  }
  return out;
}
