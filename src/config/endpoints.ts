/**
 * Which data endpoints a stack polls, in which groups, how often and how long their series are served
 * while they fail: computed once per configuration (src/stacks.ts) and handed to the stack's parts as data.
 */
import { DATA_ENDPOINTS, GROUP_NAMES, groupOf, type DataEndpoint, type GroupName } from '../api/endpoints.js';
import type { StackConfig } from './types.js';

/** Data endpoints this stack polls: not disabled, change history only for tracked names, saved queries only when it has some. */
export function enabledEndpoints(stack: StackConfig): readonly DataEndpoint[] {
  return DATA_ENDPOINTS.filter((e) => {
    if (stack.disabledEndpoints.includes(e)) return false;
    if (e === 'asset_change') return stack.track.assets.length > 0;
    if (e === 'user_change') return stack.track.users.length > 0;
    if (e === 'data_query' || e === 'data_metadata') return stack.queries.length > 0;
    return true;
  });
}

/** How often an endpoint is polled, and how long its series stay served while it fails (staleIntervals × interval). */
export interface EndpointTiming {
  readonly intervalSeconds: number;
  readonly staleAfterSeconds: number;
}

/** What a stack polls, as its runtime's parts are given it. */
export interface PollSettings {
  readonly enabled: readonly DataEndpoint[];
  /** The groups with at least one enabled endpoint, in GROUP_NAMES order (one scheduler job each). */
  readonly groups: readonly GroupName[];
  /** Each enabled endpoint's timing: the store's settings of its slot. */
  readonly timing: ReadonlyMap<DataEndpoint, EndpointTiming>;
}

export function pollSettings(stack: StackConfig): PollSettings {
  const enabled = enabledEndpoints(stack);
  const timing = new Map<DataEndpoint, EndpointTiming>();
  for (const endpoint of enabled) {
    const intervalSeconds = stack.intervals[groupOf(endpoint)];
    timing.set(endpoint, { intervalSeconds, staleAfterSeconds: intervalSeconds * stack.staleIntervals });
  }
  const groups = GROUP_NAMES.filter((g) => enabled.some((e) => groupOf(e) === g));
  return { enabled, groups, timing };
}
