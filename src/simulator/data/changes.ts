/** Change history of tracked assets and users (spec 2.10): several entries per field, newest first. */
import { Rng } from '../random.js';
import { isoUtcSeconds } from '../format.js';
import { ASSET_FIELDS, TRACKED_ASSETS, TRACKED_USERS, USER_FIELDS, poolName } from '../text.js';
import type { ChangeEntryRow, ChangeValue } from './types.js';

const SOFTWARE = ['chrome 124', 'firefox 126', 'office 2021', 'zoom 6.0', '7-zip 23.01', 'putty 0.81'];
const DEPARTMENTS = ['IT Operations', 'Finance', 'Forschung & Entwicklung', 'Security'];

function valueFor(field: string, rng: Rng): ChangeValue {
  switch (field) {
    case 'os_version':
      return `10.0.${rng.int(17000, 22631)}`;
    case 'ip_address':
      return `10.${rng.int(0, 40)}.${rng.int(0, 255)}.${rng.int(1, 254)}`;
    case 'installed_software':
      return rng.shuffle([...SOFTWARE]).slice(0, rng.int(1, 4));
    case 'groups':
      return rng.shuffle(['vpn-users', 'finance-ro', 'admins', 'Zürich-staff']).slice(0, rng.int(1, 3));
    case 'cpu_count':
      return rng.pick([2, 4, 8, 16]);
    case 'login_count':
      return rng.int(0, 900);
    case 'department':
      return rng.pick(DEPARTMENTS);
    case 'location':
      return rng.pick(['Zürich DC 2', 'Berlin HQ', 'Lab "East"', 'remote']);
    default:
      return rng.pick(['a.nguyen', 'b.schmidt', 'c.o\'brien', 'd.müller']);
  }
}

function entries(seed: number, type: 'Asset' | 'User', id: string, count: number, nowMs: number): ChangeEntryRow[] {
  const rng = Rng.of(seed, 'changes', type, id);
  const pool = type === 'Asset' ? ASSET_FIELDS : USER_FIELDS;
  // About two entries per field, so every field that changed changed more than once.
  const fields = pool.slice(0, Math.max(1, Math.min(pool.length, Math.ceil(count / 2))));
  const current = new Map<string, ChangeValue>(fields.map((f) => [f, valueFor(f, rng)]));
  const out: ChangeEntryRow[] = [];
  let at = Math.floor(nowMs / 1000) - rng.int(60, 3600);
  for (let k = 0; k < count; k++) {
    const field = fields[k % fields.length] as string;
    const newValue = current.get(field) as ChangeValue;
    const oldValue = valueFor(field, rng);
    current.set(field, oldValue);
    out.push({ id, type, field, oldValue, newValue, changeTimeEpoch: at, changeTimeUTC: isoUtcSeconds(at * 1000) });
    at -= rng.int(600, 5 * 86_400);
  }
  return out;
}

export function trackedAssetNames(count: number): string[] {
  return Array.from({ length: count }, (_, i) => poolName(TRACKED_ASSETS, i, (n, k) => `${n}-${k}`));
}

export function trackedUserNames(count: number): string[] {
  return Array.from({ length: count }, (_, i) => poolName(TRACKED_USERS, i, (n, k) => `${k}.${n}`));
}

/** Change logs of the tracked names of one type, built when first asked for (there may be thousands). */
export class ChangeLog {
  private readonly built = new Map<string, ChangeEntryRow[]>();
  private readonly known: ReadonlySet<string>;

  constructor(
    private readonly seed: number,
    readonly type: 'Asset' | 'User',
    readonly names: readonly string[],
    private readonly perRecord: number,
    private readonly nowMs: number,
  ) {
    this.known = new Set(names);
  }

  /** Newest first; undefined for a name without a change log. */
  entries(name: string): ChangeEntryRow[] | undefined {
    if (!this.known.has(name)) return undefined;
    let list = this.built.get(name);
    if (!list) {
      list = entries(this.seed, this.type, name, this.perRecord, this.nowMs);
      this.built.set(name, list);
    }
    return list;
  }
}
