/**
 * One connector run row (spec 2.4) as served. Free-text fields (event messages, source_settings,
 * profile.error_msg) carry planted secrets; the fields the exporter turns into labels never do.
 */
import type { Rng } from '../random.js';
import { isoOffsetMillis, isoUtc } from '../format.js';
import { secret } from '../text.js';
import type { ConnectorProfileObject, ConnectorRow, ConnectorSpec, EventMessage } from './types.js';

function eventMessages(rng: Rng, status: string, spec: ConnectorSpec, records: number, n: number): EventMessage[] | string {
  const url = `https://${spec.bridgeName.replace(/_/g, '-')}.example.com/api/v2`;
  // Merger rows (and a few others) carry their log as one plain string instead of a list.
  if (spec.profileKind === 'merger' || rng.chance(0.05)) {
    return status.toLowerCase().includes('error')
      ? `Run failed: upstream ${url} rejected credentials (token ${secret(n)})`
      : `Run finished: ${records} records`;
  }
  const messages: EventMessage[] = [{ INFO: `Fetched ${records} records from ${url}` }];
  if (rng.chance(0.4)) messages.push({ INFO: `Authenticated with api key ${secret(n)}` });
  if (status.startsWith('Warning')) messages.push({ WARNING: `${rng.int(1, 40)} records skipped: missing serial_number` });
  if (status.includes('Error')) {
    messages.push({ ERROR: `Login to ${url} failed for svc_cmdb with password ${secret(n + 1)}` });
    if (rng.chance(0.5)) messages.push({ ERROR: 'Run aborted after 3 retries' });
  }
  return messages;
}

export const DEFAULT_PROFILE = 'Default profile';

/**
 * The profile slot a row was generated for, whatever name it is filed under: the history keeps its
 * newest runs per slot, so a run filed under "Default profile" still pushes out its slot's oldest.
 */
const SLOTS = new WeakMap<ConnectorRow, string>();

export function slotOf(row: ConnectorRow): string | undefined {
  return SLOTS.get(row);
}

function withSlot(row: ConnectorRow, spec: ConnectorSpec, p: number): ConnectorRow {
  SLOTS.set(row, `${spec.bridgeName}\u0000#${p}`);
  return row;
}

function profileField(spec: ConnectorSpec, p: number, status: string, n: number): ConnectorRow['profile'] {
  const profile = spec.profiles[p];
  if (!profile || spec.profileKind === 'merger') return null;
  if (spec.profileKind === 'action') return `${profile.displayName} export`;
  // The real service often files a run under "Default profile" while the profile has a name.
  if (p === 0 && spec.defaultProfileRuns && n % 2 === 0) return DEFAULT_PROFILE;
  if (spec.profileKind === 'string') return profile.name;
  const object: ConnectorProfileObject = {
    mongo_id: { timestamp: profile.createdAt, date: isoUtc(profile.createdAt * 1000) },
    profile_name: profile.name,
    display_name: profile.displayName,
  };
  if (status === 'Error') object.error_msg = `LDAP bind as cn=svc_cmdb failed: password '${secret(n)}' rejected`;
  return object;
}

/** Four variants per connector (one per planted secret), shared by its rows. */
const SOURCE_SETTINGS = new WeakMap<ConnectorSpec, Map<string, string>>();

function sourceSettings(spec: ConnectorSpec, n: number): string {
  const password = secret(n);
  const variants = SOURCE_SETTINGS.get(spec) ?? new Map<string, string>();
  SOURCE_SETTINGS.set(spec, variants);
  let text = variants.get(password);
  if (text === undefined) {
    text = renderSourceSettings(spec, password);
    variants.set(password, text);
  }
  return text;
}

function renderSourceSettings(spec: ConnectorSpec, password: string): string {
  return JSON.stringify({
    platform: spec.platform,
    type: spec.profileKind === 'merger' ? 'merger' : 'connector',
    technology: spec.technology,
    display_name: spec.displayName,
    output: 'cmdb',
    connection: { url: `https://${spec.bridgeName.replace(/_/g, '-')}.example.com`, username: 'svc_cmdb', password },
  });
}

/** Field lists shared by every row of a connector: rows are only serialized, never changed. */
const FIELD_LISTS = new WeakMap<ConnectorSpec, { actual: string[]; output: string[] }>();

function fieldLists(spec: ConnectorSpec): { actual: string[]; output: string[] } {
  let lists = FIELD_LISTS.get(spec);
  if (!lists) {
    const actual = spec.expectedFields.filter((f) => !spec.missingFields.includes(f));
    lists = { actual, output: actual.map((f) => `asset.${f}`) };
    FIELD_LISTS.set(spec, lists);
  }
  return lists;
}

/** One row: profile `p` of `spec`, finishing at `endS` (epoch seconds). */
export function runRow(rng: Rng, spec: ConnectorSpec, p: number, endS: number, status: string): ConnectorRow {
  return withSlot(buildRow(rng, spec, p, endS, status), spec, p);
}

function buildRow(rng: Rng, spec: ConnectorSpec, p: number, endS: number, status: string): ConnectorRow {
  const n = rng.int(0, 1_000_000);
  const durationS = rng.int(20, 170);
  const failed = status === 'Error';
  const input = Math.max(1, Math.round(spec.inputRecords * (0.95 + rng.next() * 0.1)));
  const output = failed ? 0 : Math.round(input * (0.9 + rng.next() * 0.1));
  const fields = fieldLists(spec);
  const when = { _utc: isoOffsetMillis(endS * 1000 + rng.int(0, 999), rng.chance(0.5)), _time: endS };
  const messages = eventMessages(rng, status, spec, input, n);
  if (spec.profileKind === 'merger') {
    // Merger rows, as on the real service: profile null, end_time and the Airflow run id.
    const day = new Date(endS * 1000).toISOString().slice(0, 10);
    return {
      ...when,
      bridge_name: spec.bridgeName,
      display_name: spec.displayName,
      profile: null,
      platform: spec.platform,
      version: spec.version,
      status,
      source_settings: sourceSettings(spec, n),
      end_time: endS - rng.int(0, 3),
      output_records: output,
      event_messages: messages,
      dag_run_id: `scheduled__${day}T01:05:00+00:00`,
    };
  }
  if (spec.profileKind === 'action') {
    return { ...when, bridge_name: spec.bridgeName, display_name: spec.displayName, profile: profileField(spec, p, status, n), platform: spec.platform, version: spec.version, status: status.includes('Error') ? 'FAILED' : 'SUCCESS', source_settings: sourceSettings(spec, n), output_records: output, event_messages: messages };
  }
  const timing = spec.timed ? { start_time: endS - durationS, end_time: endS, duration_minutes: Math.round((durationS / 60) * 1000) / 1000 } : {};
  return {
    ...when,
    bridge_name: spec.bridgeName,
    display_name: spec.displayName,
    profile: profileField(spec, p, status, n),
    platform: spec.platform,
    version: spec.version,
    status,
    source_settings: sourceSettings(spec, n),
    ...timing,
    input_records: input,
    output_records: output,
    expected_input_fields: spec.expectedFields,
    raw_data_fields: spec.rawFields,
    actual_input_fields: failed ? [] : fields.actual,
    output_fields: failed ? [] : fields.output,
    event_messages: messages,
    data_qa_info: rng.chance(0.15) ? [{ check: 'duplicate_hostname', count: rng.int(1, 9) }] : [],
  };
}
