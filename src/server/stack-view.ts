/**
 * What the status page says of one stack: its cause (src/server/cause.ts) first, with the lines it
 * explains folded under it, then the other problems (src/server/attention.ts), each with since when
 * and whether it is new to the viewer: it appeared after the viewer's previous look (the page's own
 * refresh says when that was), or, on a first look, in the newest poll of its endpoint.
 */
import { attention, type Attention, type Problem } from './attention.js';
import { stackCause, type StackCause } from './cause.js';
import type { LandingStack } from './landing-model.js';

export interface Line extends Problem {
  /** It appeared after the viewer's previous look; on a first look, in the newest poll of its endpoint. */
  readonly isNew: boolean;
}

export interface CauseLine extends StackCause {
  readonly key: string;
  readonly isNew: boolean;
  /** The newest successful poll of any endpoint: how old the data below is. */
  readonly dataAt?: number;
}

export interface StackView {
  /** The attention of the stack, its state critical when a cause explains it. */
  readonly attention: Attention;
  readonly cause?: CauseLine;
  /** The lines shown, the cause's aside. */
  readonly lines: readonly Line[];
  /** The lines the cause explains, folded under it. */
  readonly folded: readonly Line[];
}

/** What stackView needs of a stack: its status page model, and what the page remembers of it. */
export type ViewInput = Pick<LandingStack, 'samples' | 'endpoints' | 'unauthorized' | 'pauses' | 'requests' | 'seen'>;

const causeKey = (c: StackCause) => `${c.alert}:`;

/**
 * `lastLook`: when the page the viewer looked at before was made (unix seconds), if known. A problem
 * first seen after it is new, however many polls of its endpoint came since: it stays new until
 * the viewer has been shown it. Without it (a first look), what the newest poll of its endpoint
 * brought is new.
 */
export function stackView(stack: ViewInput, now: number, lastLook?: number): StackView {
  const a = attention({ samples: stack.samples ?? [], endpoints: stack.endpoints, now, pauses: stack.pauses });
  const cause = stackCause({ now, unauthorized: stack.unauthorized, pause: stack.pauses?.find((p) => p.scope === 'stack'), endpoints: stack.endpoints, requests: stack.requests });
  const polledAt = new Map(stack.endpoints.map((e) => [e.endpoint, e.lastPollAt] as const));
  const seen = stack.seen;
  const isNew = (first: number | undefined, poll: number | undefined) =>
    first !== undefined && (lastLook !== undefined ? first > lastLook : poll !== undefined && first >= poll);
  const line = (p: Problem): Line => {
    const first = seen?.get(p.key);
    return { ...p, since: p.since ?? first, isNew: isNew(first, polledAt.get(p.source)) };
  };
  const all = a.problems.map(line);
  if (!cause) return { attention: a, lines: all, folded: [] };
  const key = causeKey(cause);
  const first = seen?.get(key);
  const newestPoll = Math.max(...stack.endpoints.map((e) => e.lastPollAt ?? -Infinity));
  const successes = stack.endpoints.map((e) => e.lastSuccessAt).filter((t): t is number => t !== undefined);
  const causeLine: CauseLine = {
    ...cause,
    key,
    since: cause.since ?? first,
    isNew: isNew(first, newestPoll),
    ...(successes.length > 0 ? { dataAt: Math.max(...successes) } : {}),
  };
  return {
    attention: { ...a, state: 'critical' },
    cause: causeLine,
    lines: all.filter((l) => !cause.explains(l)),
    folded: all.filter((l) => cause.explains(l)),
  };
}

/** Every problem key of a view, its cause's included: what the page's memory observes. */
export function viewKeys(view: StackView): string[] {
  return [...(view.cause ? [view.cause.key] : []), ...view.lines.map((l) => l.key), ...view.folded.map((l) => l.key)];
}
