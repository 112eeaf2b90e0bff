/** Actions area: the Action list (…/actions, also …/action) and each Action's jobs (action-jobs.ts). */
import type { Action } from '../api/schemas.js';
import { parseTimestamp } from '../time.js';
import type { Collector, CollectorContext } from './types.js';
import { SampleSet, firstOfEach, label, preview, readTime, statusText } from './emit.js';

const STATUS = 'cmdb_action_status';
const STATUS_BASE = ['RUNNING'];
/** nextRunAt holds this text for Actions that run after ingestion (as the API documents): expected, no log line. */
const AFTER_INGESTION_TEXT = /^\s*after\s+next\s+data\s+ingestion\s*$/i;

function nextRun(action: Action, ctx: CollectorContext, key: { action_id: string }): number | undefined {
  const at = action.nextRunAt;
  if (at == null || at === '') return undefined;
  const t = parseTimestamp(at, ctx.timeZone);
  if (t === undefined && !(typeof at === 'string' && AFTER_INGESTION_TEXT.test(at))) {
    ctx.debug('nextRunAt is not a time; sample dropped', { field: 'nextRunAt', value: preview(at), ...key });
  }
  return t;
}

function collectAction(action: Action, out: SampleSet, ctx: CollectorContext): void {
  const key = { action_id: action.actionId };
  out.info('cmdb_action_info', {
    ...key,
    action_name: label(action.actionName),
    action_type: label(action.actionType),
    action_group: label(action.actionGroup),
    schedule_type: label(action.scheduleType),
  });
  out.stateSet(STATUS, key, 'status', statusText(action.status), STATUS_BASE);
  out.gauge('cmdb_action_last_run_timestamp_seconds', key, readTime(ctx, 'lastRunAt', action.lastRunAt, key));
  out.gauge('cmdb_action_next_run_timestamp_seconds', key, nextRun(action, ctx, key));
}

export const collectActions: Collector<'actions'> = (actions, ctx) => {
  const out = new SampleSet(ctx);
  const once = firstOfEach(actions, (a) => a.actionId, ctx, 'actionId repeated in the Action list; later entry ignored', (id) => ({ action_id: id }));
  for (const action of once) collectAction(action, out, ctx);
  return out.finish([STATUS]);
};
