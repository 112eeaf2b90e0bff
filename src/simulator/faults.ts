/**
 * Fault injection (api.ts FaultRule). The first active rule that matches a request applies; a rule
 * with `times` expires after that many matches. Rules are validated on the way in, whether they come
 * from code, the CLI or the admin API.
 */
import { z } from 'zod';
import { ENDPOINTS, type EndpointName } from '../api/endpoints.js';
import { ConfigError } from '../errors.js';
import type { FaultRule } from './api.js';
import { errorReply, json, type Reply } from './http-io.js';

/**
 * A FaultRule that may also name one raw path, to fault one spelling of an endpoint only, and one
 * raw query (as sent, without '?'), to fault one request of an endpoint only (`date=2026-11-03`).
 */
export interface SimulatorFaultRule extends FaultRule {
  path?: string;
  query?: string;
}

export const FaultRuleSchema = z
  .object({
    endpoint: z.enum([...ENDPOINTS, '*']),
    path: z.string().startsWith('/').optional(),
    query: z.string().optional(),
    status: z.number().int().min(100).max(599).optional(),
    body: z.string().optional(),
    retryAfterSeconds: z.number().int().min(0).optional(),
    retryAfterDate: z.boolean().optional(),
    latencyMs: z.number().int().min(0).max(600_000).optional(),
    hold: z.boolean().optional(),
    malformedJson: z.boolean().optional(),
    wrongShape: z.boolean().optional(),
    reset: z.boolean().optional(),
    redirectTo: z.string().min(1).optional(),
    contentType: z.string().min(1).max(200).optional(),
    dripMs: z.number().int().min(1).max(60_000).optional(),
    oversizeBytes: z.number().int().min(1).max(4 * 1024 ** 3).optional(),
    chunked: z.boolean().optional(),
    contentEncoding: z.string().regex(/^[\w.+-]{1,32}$/).optional(),
    times: z.number().int().min(1).optional(),
  })
  .strict()
  .refine(
    (r) =>
      r.status !== undefined ||
      r.latencyMs !== undefined ||
      r.hold ||
      r.malformedJson ||
      r.wrongShape ||
      r.reset ||
      r.redirectTo ||
      r.dripMs !== undefined ||
      r.oversizeBytes !== undefined ||
      r.contentEncoding !== undefined,
    { message: 'a fault needs at least one of status, latencyMs, hold, malformedJson, wrongShape, reset, redirectTo, dripMs, oversizeBytes, contentEncoding' },
  )
  .refine((r) => r.chunked === undefined || r.oversizeBytes !== undefined, {
    message: 'chunked applies to oversizeBytes only',
    path: ['chunked'],
  })
  .refine((r) => r.redirectTo === undefined || r.status === undefined || (r.status >= 300 && r.status < 400), {
    message: 'with redirectTo, status must be a 3xx code',
    path: ['status'],
  });

export function parseFaultRule(input: unknown): SimulatorFaultRule {
  const result = FaultRuleSchema.safeParse(input);
  if (result.success) return result.data;
  throw new ConfigError(
    result.error.issues.map((i) => ({ path: i.path.map(String).join('.') || 'fault', message: i.message })),
  );
}

export class FaultBook {
  private rules: SimulatorFaultRule[] = [];
  /** Answers held by a `hold` rule, let go when the faults are cleared. */
  private held: Array<() => void> = [];

  add(rule: unknown): void {
    this.rules.push(parseFaultRule(rule));
  }

  clear(): void {
    this.rules = [];
    for (const release of this.held.splice(0)) release();
  }

  /** Resolves once the faults are next cleared (or at once with none held, for a closed simulator). */
  released(): Promise<void> {
    return new Promise((resolve) => this.held.push(resolve));
  }

  /** Active rules, with `times` counting what is left. */
  list(): SimulatorFaultRule[] {
    return this.rules.map((r) => ({ ...r }));
  }

  /** The rule for this request, if any, counting it as used. */
  take(endpoint: EndpointName | null, rawPath: string, rawQuery = ''): SimulatorFaultRule | undefined {
    if (endpoint === null) return undefined;
    const index = this.rules.findIndex(
      (r) => (r.endpoint === '*' || r.endpoint === endpoint) && (r.path === undefined || r.path === rawPath) && (r.query === undefined || r.query === rawQuery),
    );
    const rule = this.rules[index];
    if (!rule) return undefined;
    if (rule.times !== undefined) {
      if (rule.times <= 1) this.rules.splice(index, 1);
      else this.rules[index] = { ...rule, times: rule.times - 1 };
    }
    return rule;
  }
}

/** Valid JSON that fails the endpoint's schema (an object where a list is expected, a field missing). */
const WRONG_SHAPES: Record<EndpointName, unknown> = {
  access_token: { code: 200, data: { unexpected: true }, message: 'success' },
  metrics_data: { assetCount: 'many', userCount: null },
  license: { unexpected: true },
  connector: { content: { unexpected: true } },
  data_ingestion: { data_ingestion_runs: { unexpected: true } },
  data_ingestion_next: { unexpected: true },
  data_ingestion_detail: { task_list: { unexpected: true } },
  actions: { actions: { unexpected: true } },
  action_jobs: { unexpected: true },
  asset_change: { unexpected: true },
  user_change: { unexpected: true },
  data_metadata: { metadata: { unexpected: true } },
  data_query: { totalRecords: 'many', data: [] },
};

export type FaultEffect =
  | { kind: 'reset' }
  | { kind: 'reply'; reply: Reply }
  /** The body, one byte every `everyMs` ms. */
  | { kind: 'drip'; reply: Reply; everyMs: number }
  /** A 200 with a JSON body of `bytes` bytes, produced while it is sent. */
  | { kind: 'oversize'; bytes: number; chunked: boolean; encoding?: string }
  | { kind: 'none' };

function withContentType(rule: FaultRule, reply: Reply): Reply {
  if (rule.contentType === undefined) return reply;
  return { ...reply, headers: { ...reply.headers, 'Content-Type': rule.contentType } };
}

/**
 * What a rule does to a request, apart from its latency. `normal` is the body the endpoint would
 * have sent (a malformed answer is that body cut short, like a dropped connection mid-body).
 */
export function faultEffect(rule: FaultRule, endpoint: EndpointName, normal: () => string, nowMs: number = Date.now()): FaultEffect {
  if (rule.reset) return { kind: 'reset' };
  const effect = replyEffect(rule, endpoint, normal, nowMs);
  return effect.kind === 'reply' || effect.kind === 'drip' ? { ...effect, reply: withContentType(rule, effect.reply) } : effect;
}

function replyEffect(rule: FaultRule, endpoint: EndpointName, normal: () => string, nowMs: number): FaultEffect {
  if (rule.oversizeBytes !== undefined) {
    const encoding = rule.contentEncoding;
    return { kind: 'oversize', bytes: rule.oversizeBytes, chunked: rule.chunked === true, ...(encoding === undefined ? {} : { encoding }) };
  }
  if (rule.dripMs !== undefined) return { kind: 'drip', reply: { status: 200, body: normal() }, everyMs: rule.dripMs };
  if (rule.redirectTo !== undefined) {
    const status = rule.status ?? 302;
    return { kind: 'reply', reply: { ...errorReply(status, 'Moved'), headers: { Location: rule.redirectTo } } };
  }
  if (rule.status !== undefined) {
    const reply: Reply = rule.body !== undefined ? { status: rule.status, body: rule.body } : errorReply(rule.status, 'Injected fault');
    if (rule.retryAfterSeconds !== undefined) reply.headers = retryAfterHeaders(rule.retryAfterSeconds, rule.retryAfterDate === true, nowMs);
    return { kind: 'reply', reply };
  }
  if (rule.malformedJson) {
    const body = normal();
    return { kind: 'reply', reply: { status: 200, body: body.slice(0, Math.max(1, Math.floor(body.length / 2))) } };
  }
  if (rule.wrongShape) return { kind: 'reply', reply: json(200, WRONG_SHAPES[endpoint]) };
  return { kind: 'none' };
}

/** Retry-After in seconds, or as an HTTP-date of the simulator's clock with its Date header. */
function retryAfterHeaders(seconds: number, asDate: boolean, nowMs: number): Record<string, string> {
  if (!asDate) return { 'Retry-After': String(seconds) };
  return { Date: new Date(nowMs).toUTCString(), 'Retry-After': new Date(nowMs + seconds * 1000).toUTCString() };
}
