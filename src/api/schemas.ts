/**
 * Tolerant schemas for every response body of the CMDB API (the shapes and their variants:
 * docs/cmdb-api-notes.md).
 *
 * - Unknown fields are ignored (and stripped, so fields that may hold credentials such as
 *   `docker_cmd`, `source_settings` or `action_status_msg` never travel past the client).
 * - Identity fields the exporter cannot work without are required; a body that lacks one, or is not
 *   of the documented shape at all, fails validation and the endpoint reports `invalid_body`.
 * - Every other field is optional; a value of the wrong type is treated as absent (the sample that
 *   needs it is dropped) instead of failing the whole response.
 * - Numbers sent as strings ("42") are accepted; times stay as sent and are parsed by src/time.ts.
 */
import { z } from 'zod';
import { formatPath } from '../errors.js';

const NUMERIC = /^\s*-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\s*$/;

/**
 * The type of a value the server sent, never the value: the CMDB's text may hold credentials
 * (spec, real service), and messages reach the log and the status page.
 */
function describe(input: unknown): string {
  if (input === null) return 'null';
  if (Array.isArray(input)) return 'a list';
  if (typeof input === 'number') return 'a non-finite number';
  return typeof input === 'string' ? `a text (${input.length} characters)` : `a ${typeof input}`;
}
/** Zod's union errors say only "Invalid input"; say what was expected and what came instead. */
function expected(what: string) {
  return {
    error: (issue: { input?: unknown }) =>
      issue.input === undefined ? `required field is missing (expected ${what})` : `expected ${what}, got ${describe(issue.input)}`,
  };
}

/** A finite number, or a string holding one. */
export const num = z.union([z.number(), z.string().regex(NUMERIC).transform(Number)], expected('a number'));
const optNum = num.nullish().catch(undefined);
/** Text; numbers and booleans are turned into their text so an id may arrive as a number. */
const text = z.union([z.string(), z.number().transform(String), z.boolean().transform(String)]);
const optText = text.nullish().catch(undefined);
const idText = z.union([z.string().min(1), z.number().transform(String)], expected('a non-empty text or number'));
/** A time as sent: ISO 8601 or `yyyy-mm-dd HH:mm:ss` text, or epoch seconds. */
const optTime = z.union([z.string(), z.number()]).nullish().catch(undefined);
const optBool = z.boolean().nullish().catch(undefined);
const optList = z.array(z.unknown()).nullish().catch(undefined);

/** A mapping (`{…}`): not null, not a list. */
export function isMapping(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Accept `{...record}` or `{ data: {...record} }` (the token endpoint's envelope style). */
function recordEnvelope(expected: readonly string[]) {
  return (body: unknown): unknown => {
    if (isMapping(body) && !expected.some((k) => k in body) && isMapping(body.data)) return body.data;
    return body;
  };
}

/** Accept `{ key: [...] }`, a bare array, `{ data: [...] }` or `{ data: { key: [...] } }`. */
function listEnvelope(key: string) {
  return (body: unknown): unknown => {
    if (Array.isArray(body)) return { [key]: body };
    if (isMapping(body) && !(key in body)) {
      if (Array.isArray(body.data)) return { ...body, [key]: body.data };
      if (isMapping(body.data) && key in body.data) return body.data;
    }
    return body;
  };
}

/** Accept a bare array, or an object holding the array under one of `keys`. */
function arrayEnvelope(keys: readonly string[]) {
  return (body: unknown): unknown => {
    if (isMapping(body)) {
      for (const k of keys) if (Array.isArray(body[k])) return body[k];
    }
    return body;
  };
}

export const TokenResponseSchema = z.object({
  code: optNum,
  message: optText,
  data: z.object({ token: z.string().nullish().catch(undefined) }).nullish().catch(undefined),
});
export type TokenResponse = z.output<typeof TokenResponseSchema>;

export const MetricsRecordSchema = z.preprocess(
  recordEnvelope(['assetCount', 'userCount']),
  z.object({
    assetCount: num,
    userCount: num,
    date: optText,
    avg30DaysAssetCount: optNum,
    avg30DaysUserCount: optNum,
  }),
);
export type MetricsRecord = z.output<typeof MetricsRecordSchema>;

export const LicenseRecordSchema = z.preprocess(
  recordEnvelope(['licenseType', 'expireDate', 'customerName']),
  z
    .object({ licenseType: optText, expireDate: optTime, customerName: optText })
    .refine((l) => l.licenseType != null || l.expireDate != null || l.customerName != null, {
      message: 'none of licenseType, expireDate, customerName is present',
    }),
);

export const ConnectorProfileSchema = z.object({
  profile_name: optText,
  display_name: optText,
});
/** One row of the connector run history. */
export const ConnectorRunSchema = z.object({
  _utc: optTime,
  _time: optNum,
  bridge_name: idText,
  display_name: optText,
  /** An object (with profile_name), a plain string, or null for internal merger rows. */
  profile: z.union([ConnectorProfileSchema, z.string(), z.null()]).optional().catch(undefined),
  platform: optText,
  version: optText,
  status: optText,
  start_time: optTime,
  end_time: optTime,
  duration_minutes: optNum,
  input_records: optNum,
  output_records: optNum,
  expected_input_fields: optList,
  raw_data_fields: optList,
  actual_input_fields: optList,
  output_fields: optList,
  /** A list of level-keyed objects ({"ERROR": "text"}), or one plain string. Texts never become labels. */
  event_messages: z.union([z.array(z.unknown()), z.string()]).nullish().catch(undefined),
});
export type ConnectorRun = z.output<typeof ConnectorRunSchema>;

/** The page fields the paging loop reads (src/cmdb/readers/pages.ts); the others are stripped. */
const pageFields = { last: optBool, totalPages: optNum };

export const ConnectorPageSchema = z.preprocess(
  listEnvelope('content'),
  z.object({ content: z.array(ConnectorRunSchema), ...pageFields }),
);

export const IngestionRunSchema = z.object({
  id: idText,
  run_type: optText,
  status: optText,
  start_date: optTime,
  /** Absent or null while the run is running. */
  end_date: optTime,
});
export type IngestionRun = z.output<typeof IngestionRunSchema>;

export const IngestionRunListSchema = z.preprocess(
  listEnvelope('data_ingestion_runs'),
  z.object({ data_ingestion_runs: z.array(IngestionRunSchema) }),
);

export const NextRunSchema = z.preprocess(
  recordEnvelope(['next_run_at', 'schedule_interval_value', 'schedule_interval_type']),
  z
    .object({
      /** A time, or a text message while a run is in progress. */
      next_run_at: optTime,
      schedule_interval_value: optText,
      schedule_interval_type: optText,
    })
    .refine(
      (n) => n.next_run_at != null || n.schedule_interval_value != null || n.schedule_interval_type != null,
      { message: 'none of next_run_at, schedule_interval_value, schedule_interval_type is present' },
    ),
);

export const IngestionTaskSchema = z.object({
  task_id: idText,
  operator: optText,
  // docker_cmd is deliberately not read: it may hold credentials.
  docker_image: optText,
  status: optText,
  start_date: optTime,
  end_date: optTime,
});

export const IngestionDetailSchema = z.preprocess(
  listEnvelope('task_list'),
  z.object({ task_list: z.array(IngestionTaskSchema) }),
);

export const ActionSchema = z.object({
  /** May arrive as a number; kept as text. */
  actionId: idText,
  actionName: optText,
  actionType: optText,
  actionGroup: optText,
  createdAt: optTime,
  lastRunAt: optTime,
  /** A time, or a text such as "After Next Data Ingestion". */
  nextRunAt: optTime,
  scheduleType: optText,
  status: optText,
});
export type Action = z.output<typeof ActionSchema>;

export const ActionPageSchema = z.preprocess(
  listEnvelope('actions'),
  z.object({ actions: z.array(ActionSchema), ...pageFields }),
);

export const ActionJobSchema = z.object({
  id: optText,
  /** `yyyy-mm-dd HH:mm:ss` (no zone) or ISO 8601. */
  action_run_date: optTime,
  action_status: optText,
  // action_status_msg is deliberately not read: free text.
  action_result_number: optNum,
});
export type ActionJob = z.output<typeof ActionJobSchema>;

export const ActionJobListSchema = z.preprocess(
  arrayEnvelope(['content', 'data', 'jobs', 'actionJobs']),
  z.array(ActionJobSchema),
);

export const ChangeEntrySchema = z.object({
  id: optText,
  type: optText,
  field: idText,
  // oldValue/newValue may be strings, numbers or lists; they are not read (values never become labels).
  changeTimeEpoch: optNum,
  changeTimeUTC: optTime,
});
export type ChangeEntry = z.output<typeof ChangeEntrySchema>;

export const ChangeListSchema = z.preprocess(
  arrayEnvelope(['content', 'data', 'changes']),
  z.array(ChangeEntrySchema),
);

export const FieldMetadataSchema = z.object({
  fieldName: idText,
  dataType: optText,
});
export type FieldMetadata = z.output<typeof FieldMetadataSchema>;

/** `GET /CMDB/v2/data/metadata/{asset,user}`: `{metadata: [...]}` (a bare list is taken too). */
export const FieldMetadataListSchema = z.preprocess(
  listEnvelope('metadata'),
  z.object({ metadata: z.array(FieldMetadataSchema) }),
);

/**
 * A count of `POST /CMDB/v2/data/cmdb`: `totalRecords` only. The records (`data`) are stripped
 * here and never read; a body without a whole count is invalid (the reader then asks page 0).
 */
export const QueryCountSchema = z.object({
  totalRecords: num.pipe(z.number().int().nonnegative()),
});

export type Validated<T> = { ok: true; value: T } | { ok: false; field: string; message: string };

export function validate<T>(schema: z.ZodType<T>, body: unknown): Validated<T> {
  const result = schema.safeParse(body);
  if (result.success) return { ok: true, value: result.data };
  const issue = result.error.issues[0];
  return {
    ok: false,
    field: issue ? formatPath(issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))) : '',
    message: issue ? issue.message : 'does not match the expected shape',
  };
}
