/**
 * What a restart keeps of a stack's snapshots (--storage.path), in a small versioned form of its
 * own: per endpoint its series as the collector made them, whether its newest poll succeeded or
 * was refused, and when it last succeeded. SnapshotStore.exportStack makes it; storeStateFrom reads
 * it back and SnapshotStore.restoreStack serves it again, under its original last-success times.
 *
 * On disk a sample is `[name, labels, value]`, a value that is not finite written as text ("NaN",
 * "+Inf", "-Inf": JSON has no such numbers). Reading checks every sample by hand, not with zod: a
 * large stack holds some 200,000 of them.
 */
import { DATA_ENDPOINTS, type DataEndpoint } from '../api/endpoints.js';
import { FAMILIES } from '../metrics/catalogue.js';
import type { JsonList } from '../json-list.js';
import type { Labels, Sample } from '../metrics/sample.js';
import { formatValue } from '../metrics/series-text.js';

export const STORE_STATE_VERSION = 1;

export interface StoredEndpoint {
  readonly endpoint: DataEndpoint;
  readonly up?: 0 | 1;
  readonly forbidden?: 0 | 1;
  readonly lastSuccess?: number;
  readonly samples: readonly Sample[];
}

/** As exportStack makes it: the samples encoded as they are written. */
export interface StoreState {
  readonly v: typeof STORE_STATE_VERSION;
  readonly endpoints: ReadonlyArray<Omit<StoredEndpoint, 'samples'> & { readonly samples: JsonList<Sample> }>;
}

export type SampleJson = [name: string, labels: Labels, value: number | string];

export function sampleToJson(s: Sample): SampleJson {
  return [s.name, s.labels, Number.isFinite(s.value) ? s.value : formatValue(s.value)];
}

const NON_FINITE: Readonly<Record<string, number>> = { NaN: Number.NaN, '+Inf': Number.POSITIVE_INFINITY, '-Inf': Number.NEGATIVE_INFINITY };

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** A sample of a family the endpoint makes, with text labels; undefined for anything else. */
function sampleFrom(x: unknown, families: ReadonlySet<string>): Sample | undefined {
  if (!Array.isArray(x) || x.length !== 3) return undefined;
  const [name, labels, raw] = x as unknown[];
  if (typeof name !== 'string' || !families.has(name) || !isRecord(labels)) return undefined;
  for (const v of Object.values(labels)) if (typeof v !== 'string') return undefined;
  const value = typeof raw === 'number' ? raw : typeof raw === 'string' ? NON_FINITE[raw] : undefined;
  return value === undefined ? undefined : { name, labels: labels as Labels, value };
}

/** The families each endpoint makes (asset_change and user_change share theirs). */
const FAMILIES_OF = new Map<DataEndpoint, ReadonlySet<string>>(
  DATA_ENDPOINTS.map((e) => {
    const own = e === 'user_change' ? 'asset_change' : e;
    return [e, new Set([...FAMILIES.values()].filter((f) => f.endpoint === own).map((f) => f.name))];
  }),
);

const flag = (x: unknown): x is 0 | 1 | undefined => x === undefined || x === 0 || x === 1;
const time = (x: unknown): x is number | undefined => x === undefined || (typeof x === 'number' && Number.isFinite(x));

function endpointFrom(x: unknown): StoredEndpoint | undefined {
  if (!isRecord(x) || !Array.isArray(x.samples)) return undefined;
  const { endpoint, up, forbidden, lastSuccess } = x;
  const families = FAMILIES_OF.get(endpoint as DataEndpoint);
  if (!families || !flag(up) || !flag(forbidden) || !time(lastSuccess)) return undefined;
  const samples: Sample[] = [];
  for (const s of x.samples as unknown[]) {
    const sample = sampleFrom(s, families);
    if (!sample) return undefined;
    samples.push(sample);
  }
  return { endpoint: endpoint as DataEndpoint, up, forbidden, lastSuccess, samples };
}

/** The endpoints of `state`, or undefined when it is not a valid state of this version (nothing of it is used). */
export function storeStateFrom(state: unknown): StoredEndpoint[] | undefined {
  if (!isRecord(state) || state.v !== STORE_STATE_VERSION || !Array.isArray(state.endpoints)) return undefined;
  const out: StoredEndpoint[] = [];
  for (const e of state.endpoints as unknown[]) {
    const endpoint = endpointFrom(e);
    if (!endpoint) return undefined;
    out.push(endpoint);
  }
  return out;
}
