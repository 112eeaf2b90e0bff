/**
 * What one connector run (its newest row) says beyond its identity: health, field lists and event
 * messages. Event texts and profile error messages are never read, only counted.
 */
import type { ConnectorRun } from '../api/schemas.js';

export { healthOf, type Health } from '../api/connector-runs.js';
import type { Health } from '../api/connector-runs.js';

export const HEALTH_STATES: readonly Health[] = ['ok', 'warning', 'error', 'unknown'];

export type FieldKind = 'expected' | 'raw' | 'actual_input' | 'output';

const FIELD_LISTS: ReadonlyArray<[FieldKind, keyof ConnectorRun]> = [
  ['expected', 'expected_input_fields'],
  ['raw', 'raw_data_fields'],
  ['actual_input', 'actual_input_fields'],
  ['output', 'output_fields'],
];

/** Length of each field list that is present (an absent list yields no entry, an empty one 0). */
export function fieldCounts(run: ConnectorRun): Array<[FieldKind, number]> {
  const out: Array<[FieldKind, number]> = [];
  for (const [kind, key] of FIELD_LISTS) {
    const list = run[key];
    if (Array.isArray(list)) out.push([kind, list.length]);
  }
  return out;
}

function fieldKey(field: unknown): string {
  return typeof field === 'string' ? field : JSON.stringify(field) ?? String(field);
}

/**
 * Distinct expected input fields that the run did not receive; undefined when the run has no
 * expected list. A missing actual list means nothing was received.
 */
export function missingFieldCount(run: ConnectorRun): number | undefined {
  if (!Array.isArray(run.expected_input_fields)) return undefined;
  const actual = new Set((run.actual_input_fields ?? []).map(fieldKey));
  const expected = new Set(run.expected_input_fields.map(fieldKey));
  let missing = 0;
  for (const f of expected) if (!actual.has(f)) missing += 1;
  return missing;
}

/** Levels that always have a series, so alerts on them see 0 rather than nothing. */
export const ALWAYS_LEVELS = ['ERROR', 'WARNING'] as const;
export const UNKNOWN_LEVEL = 'UNKNOWN';

/**
 * Event messages by level. A list element that is an object counts once per key (the key is the
 * level, as sent); any other element, and a plain string instead of a list, is one UNKNOWN.
 */
export function eventCounts(messages: ConnectorRun['event_messages']): Map<string, number> {
  const counts = new Map<string, number>(ALWAYS_LEVELS.map((l) => [l, 0]));
  const add = (level: string) => counts.set(level, (counts.get(level) ?? 0) + 1);
  if (typeof messages === 'string') {
    // An empty text is no message at all.
    if (messages.trim() !== '') add(UNKNOWN_LEVEL);
    return counts;
  }
  for (const element of messages ?? []) {
    if (element === null || element === undefined) continue;
    if (typeof element === 'object' && !Array.isArray(element)) {
      for (const level of Object.keys(element)) add(level);
    } else add(UNKNOWN_LEVEL);
  }
  return counts;
}
