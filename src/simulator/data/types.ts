/**
 * The simulated CMDB's data: the JSON rows exactly as served (field names and order from
 * the API documentation) plus the bookkeeping the timeline needs. Tests import these types to reason about
 * what a simulator holds.
 */

// ---- served rows (as documented) ----------------------------------------------------------------
export interface ConnectorProfileObject {
  mongo_id: { timestamp: number; date: string };
  profile_name: string;
  display_name: string;
  /** Present in the error case only; may hold a planted secret. */
  error_msg?: string;
}

/** One level-keyed message, e.g. `{"ERROR": "…"}`. */
export type EventMessage = Record<string, string>;

export interface ConnectorRow {
  _utc: string;
  _time: number;
  bridge_name: string;
  display_name: string;
  profile: ConnectorProfileObject | string | null;
  platform: string;
  version: string;
  status: string;
  source_settings: string;
  /**
   * Only on some rows: the real service writes start/end/duration on none of its ordinary runs
   * (only `_time`/`_utc`) and `end_time` on merger rows (docs/cmdb-api-notes.md).
   */
  start_time?: number;
  end_time?: number;
  duration_minutes?: number;
  input_records?: number;
  output_records: number;
  expected_input_fields?: string[];
  raw_data_fields?: string[];
  actual_input_fields?: string[];
  output_fields?: string[];
  event_messages: EventMessage[] | string;
  data_qa_info?: unknown[];
  /** Merger rows: the Airflow run that rebuilt the inventory. */
  dag_run_id?: string;
}

export interface IngestionRunRow {
  id: string;
  run_type: string;
  status: string;
  start_date: string;
  end_date?: string;
}

export interface IngestionTaskRow {
  task_id: string;
  operator: string;
  docker_cmd: string;
  docker_image: string;
  status: string;
  start_date?: string;
  end_date?: string;
}

export interface ActionRow {
  actionId: string | number;
  actionName: string;
  actionType: string;
  actionTypeDisplayName: string;
  actionGroup: string;
  description: string;
  createdAt: string;
  createdBy: string;
  lastRunAt: string;
  nextRunAt: string;
  scheduleType: 'SCHEDULE_BATCH_DATA' | 'AFTER_DATA_INGESTION';
  scheduleCronExpression: string;
  status: string;
}

export interface ActionJobRow {
  id: string;
  action_run_date: string;
  action_status: string;
  action_status_msg: string | null;
  action_result_number: number;
  action_result_log_id: string;
}

export type ChangeValue = string | number | string[];

export interface ChangeEntryRow {
  id: string;
  type: 'Asset' | 'User';
  field: string;
  oldValue: ChangeValue;
  newValue: ChangeValue;
  changeTimeEpoch: number;
  changeTimeUTC: string;
}

export interface MetricsRow {
  assetCount: number;
  userCount: number;
  date: string;
  avg30DaysAssetCount: number;
  avg30DaysUserCount: number;
}

export interface LicenseRow {
  licenseType: string;
  expireDate: string;
  customerName: string;
}

// ---- bookkeeping -------------------------------------------------------------------------------
/** merger: `profile: null` (platform ML-ENGINE); action: an outbound Action run, profile = Action name. */
export type ProfileKind = 'object' | 'string' | 'merger' | 'action';

export interface ProfileSpec {
  name: string;
  displayName: string;
  /** Epoch seconds the profile was created (its mongo_id). */
  createdAt: number;
}

/** A connector: what stays the same from run to run. */
export interface ConnectorSpec {
  bridgeName: string;
  displayName: string;
  platform: string;
  technology: string;
  version: string;
  profileKind: ProfileKind;
  profiles: ProfileSpec[];
  /** Status its newest generated run has; live runs mostly repeat it. */
  usualStatus: string;
  expectedFields: string[];
  rawFields: string[];
  /** Expected fields its source never delivers. */
  missingFields: string[];
  /** Base input record count per run (varies a little per run). */
  inputRecords: number;
  periodMs: number;
  nextRunMs: number;
  /** Rows carry start_time, end_time and duration_minutes (the documented shape); else `_time`/`_utc` only. */
  timed: boolean;
  /** Runs of the first profile are often filed under "Default profile" instead of its name. */
  defaultProfileRuns: boolean;
  /** Set by runConnector with holdSeconds: every run due up to `untilMs` ends with `status`. */
  held?: { status: string; untilMs: number };
}

export type IngestionStatus = 'running' | 'success' | 'failed';

export interface IngestionRun {
  id: string;
  startUs: number;
  endUs?: number;
  /** When a running run finishes on its own; unset for a run started by a scenario control. */
  plannedEndUs?: number;
  plannedOutcome: 'success' | 'failed';
  status: IngestionStatus;
}

export interface IngestionState {
  /** Oldest first. */
  runs: IngestionRun[];
  /** Next scheduled slot (ms), on the `*\/5` schedule. */
  nextSlotMs: number;
}

export interface ActionJob {
  atMs: number;
  /** Seeded place in the served (unsorted) order. */
  rank: number;
  row: ActionJobRow;
}

export interface ActionState {
  /** The id as text (the key clients use in action-jobs/<id>). */
  key: string;
  row: ActionRow;
  /** Served order (seeded, unsorted). */
  jobs: ActionJob[];
  /** Batch Actions: run period and next due time; unset for AFTER_DATA_INGESTION. */
  periodMs?: number;
  nextRunMs?: number;
}

export interface Inventory {
  assetCount: number;
  userCount: number;
  avgAssetCount: number;
  avgUserCount: number;
}
