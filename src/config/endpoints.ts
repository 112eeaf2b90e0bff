/**
 * Which data endpoints a stack polls: a fact of its configuration, computed once per configuration
 * (a StackConfig is never changed: a reload makes a new one) and read by the stack's road, poller,
 * store slot and instruments alike.
 */
import { DATA_ENDPOINTS, type DataEndpoint } from '../api/endpoints.js';
import type { StackConfig } from './types.js';

const computed = new WeakMap<StackConfig, readonly DataEndpoint[]>();

/** Data endpoints this stack polls: not disabled, change history only for tracked names, saved queries only when it has some. */
export function enabledEndpoints(stack: StackConfig): readonly DataEndpoint[] {
  let enabled = computed.get(stack);
  if (!enabled) {
    enabled = DATA_ENDPOINTS.filter((e) => {
      if (stack.disabledEndpoints.includes(e)) return false;
      if (e === 'asset_change') return stack.track.assets.length > 0;
      if (e === 'user_change') return stack.track.users.length > 0;
      if (e === 'data_query' || e === 'data_metadata') return stack.queries.length > 0;
      return true;
    });
    computed.set(stack, enabled);
  }
  return enabled;
}
