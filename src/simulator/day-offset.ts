/**
 * CMDB_SIM_DAY_OFFSET=N (whole days, -3650 to 3650; default 0): the simulator draws its seeded,
 * time-keyed randomness — the daily asset and user counts, the connector runs, the ingestion runs,
 * the Action jobs, the drift of the counts and the data records of a rebuild — as it would N days
 * later, while its clock (every timestamp it serves) stays the machine's. Prometheus's clock cannot
 * be moved, so this is how the end-to-end tests meet the data another date would give.
 */
import { DAY_MS } from './format.js';

const LIMIT_DAYS = 3650;

/** The offset in days from the environment; a value that is not a whole number in range is refused. */
export function parseDayOffset(text: string | undefined): number {
  if (text === undefined || text.trim() === '') return 0;
  const days = Number(text);
  if (!Number.isInteger(days) || Math.abs(days) > LIMIT_DAYS) {
    throw new RangeError(`CMDB_SIM_DAY_OFFSET: must be a whole number of days from -${LIMIT_DAYS} to ${LIMIT_DAYS}, got "${text}"`);
  }
  return days;
}

const OFFSET_MS = parseDayOffset(process.env.CMDB_SIM_DAY_OFFSET) * DAY_MS;

/** The time a time-keyed random stream is keyed on: `ms` moved by CMDB_SIM_DAY_OFFSET. */
export function seedTime(ms: number): number {
  return ms + OFFSET_MS;
}
