/** Response bodies of the data endpoints (the documented shapes and query parameters). */
import type { DataEndpoint } from '../api/endpoints.js';
import { isoDay, parseDay, startOfDay } from './format.js';
import { errorReply, json, type Reply } from './http-io.js';
import { pageRequest, slicePage } from './paging.js';
import { SORTABLE_FIELDS, type SortDirection } from './data/connector-history.js';
import { ingestionRunRow, nextRunRow, taskRows } from './data/ingestion.js';
import { currentMetrics, initialInventory, pastMetrics } from './data/inventory.js';
import type { Dataset } from './data/dataset.js';
import { metadataOf } from './data/records.js';
import { dataQuery } from './query-engine.js';

export interface HandlerContext {
  data: Dataset;
  nowMs: number;
  connectorPageSize: number;
  actionPageSize: number;
  /** Serve the connector history unsorted whatever `sort=` asks. */
  ignoreSort: boolean;
}

/** `body`: the request body of a POST (the data query). */
type Handler = (ctx: HandlerContext, query: URLSearchParams, arg: string | undefined, body?: string) => Reply;

const metricsData: Handler = (ctx, query) => {
  const date = query.get('date');
  if (date === null) return json(200, currentMetrics(ctx.data.inventory, ctx.nowMs));
  const day = parseDay(date);
  if (day === undefined) return errorReply(400, 'date must be a real day as yyyy-mm-dd');
  const today = startOfDay(ctx.nowMs);
  if (day > today) return errorReply(404, `no metrics record for ${isoDay(day)}`);
  if (day === today) return json(200, currentMetrics(ctx.data.inventory, ctx.nowMs));
  // From the seed's starting counts and the day the simulator started: a past day's answer never changes.
  return json(200, pastMetrics(ctx.data.seed, initialInventory(ctx.data.seed), day, startOfDay(ctx.data.startMs)));
};

function parseSort(text: string | null): { field: string; direction: SortDirection } | string | undefined {
  if (text === null || text === '') return undefined;
  const [field = '', direction = 'asc', ...rest] = text.split(',');
  if (!SORTABLE_FIELDS.has(field)) return `cannot sort by ${JSON.stringify(field)}`;
  const dir = direction.toLowerCase();
  if ((dir !== 'asc' && dir !== 'desc') || rest.length > 0) return 'sort must be <field>,<asc|desc>';
  return { field, direction: dir };
}

const connector: Handler = (ctx, query) => {
  const req = pageRequest(query, ctx.connectorPageSize);
  if (typeof req === 'string') return errorReply(400, req);
  const sort = parseSort(query.get('sort'));
  if (typeof sort === 'string') return errorReply(400, sort);
  const honoured = ctx.ignoreSort ? undefined : sort;
  const rows = honoured ? ctx.data.history.sorted(honoured.field, honoured.direction) : ctx.data.history.all();
  const { items, info } = slicePage(rows, req, honoured !== undefined);
  const reply = json(200, {
    content: items,
    pageable: info.pageable,
    last: info.last,
    totalPages: info.totalPages,
    totalElements: info.totalElements,
    size: req.size,
    number: req.page,
    first: info.first,
    numberOfElements: info.numberOfElements,
    empty: items.length === 0,
  });
  return { ...reply, rows: items.length };
};

const detail: Handler = (ctx, _query, runId) => {
  const run = ctx.data.ingestion.runs.find((r) => r.id === runId);
  if (!run) return errorReply(404, 'No data ingestion run with this id');
  return json(200, { task_list: taskRows(ctx.data.seed, run, ctx.data.size.tasksPerRun, ctx.nowMs * 1000) });
};

const actions: Handler = (ctx, query) => {
  const req = pageRequest(query, ctx.actionPageSize);
  if (typeof req === 'string') return errorReply(400, req);
  const rows = [...ctx.data.actions.values()].map((a) => a.row);
  const { items, info } = slicePage(rows, req, false);
  return json(200, {
    last: info.last,
    numberOfElements: info.numberOfElements,
    totalPages: info.totalPages,
    pageable: info.pageable,
    actions: items,
  });
};

const actionJobs: Handler = (ctx, _query, actionId) => {
  const action = actionId === undefined ? undefined : ctx.data.actions.get(actionId);
  if (!action) return errorReply(404, 'No Action with this id');
  return json(200, action.jobs.map((j) => j.row));
};

function changes(kind: 'assets' | 'users'): Handler {
  return (ctx, query) => {
    const id = query.get('id');
    if (id === null || id === '') return errorReply(400, 'query parameter id is required');
    const entries = ctx.data.changes[kind].entries(id);
    return entries ? json(200, entries) : errorReply(404, 'No change log for this id');
  };
}

const HANDLERS: Record<DataEndpoint, Handler> = {
  metrics_data: metricsData,
  license: (ctx) => json(200, ctx.data.license),
  connector,
  data_ingestion: (ctx) => json(200, { data_ingestion_runs: ctx.data.ingestion.runs.map(ingestionRunRow) }),
  data_ingestion_next: (ctx) => json(200, nextRunRow(ctx.data.ingestion, ctx.nowMs)),
  data_ingestion_detail: detail,
  actions,
  action_jobs: actionJobs,
  asset_change: changes('assets'),
  user_change: changes('users'),
  data_metadata: (_ctx, _query, table) => (table === 'asset' || table === 'user' ? json(200, metadataOf(table)) : errorReply(404, 'No metadata for this table')),
  data_query: (ctx, _query, _arg, body) => dataQuery(ctx.data.records, body ?? ''),
};

export function dataReply(endpoint: DataEndpoint, ctx: HandlerContext, query: URLSearchParams, arg?: string, body?: string): Reply {
  return HANDLERS[endpoint](ctx, query, arg, body);
}
