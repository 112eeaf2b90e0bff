/**
 * The admin HTTP API under /_admin/ (no auth, JSON in and out): the controls of api.ts for other
 * processes, such as the demo or a shell with curl. Bad input gets a 400 that says what is wrong.
 */
import type { IncomingMessage } from 'node:http';
import { z } from 'zod';
import { DATA_ENDPOINTS } from '../api/endpoints.js';
import { ConfigError } from '../errors.js';
import type { ConnectorPace, ScenarioControls } from './api.js';
import { checkConnectorPace, stateSummary, type Core } from './core.js';
import { parseFaultRule } from './faults.js';
import { json, readBody, type Reply } from './http-io.js';

const ADMIN_BODY_LIMIT = 1024 * 1024;

/** Argument names of each scenario control, in call order (POST /_admin/scenario/<name>). */
export const SCENARIO_ARGS: Record<keyof ScenarioControls, readonly string[]> = {
  setLicenseExpiry: ['date'],
  runConnector: ['bridgeName', 'status', 'holdSeconds'],
  runIngestion: ['outcome'],
  finishIngestion: ['outcome'],
  runActionJob: ['actionId', 'status'],
  removeConnector: ['bridgeName'],
  addConnector: ['bridgeName', 'status', 'lastRunSecondsAgo'],
  removeAction: ['actionId'],
  addAction: ['actionId', 'name'],
  setAssetCount: ['count'],
  setUserCount: ['count'],
  advance: ['seconds'],
  rebuild: [],
};

const TokenExpiryBody = z
  .object({ afterRequests: z.number().int().min(0).optional(), afterSeconds: z.number().min(0).optional() })
  .strict()
  .nullable();
const RateLimitBody = z
  .object({ perMinute: z.number().int().min(0), retryAfter: z.boolean().default(false) })
  .strict()
  .nullable();
const ForbidBody = z.union([
  z.array(z.enum(DATA_ENDPOINTS)),
  z.object({ endpoints: z.array(z.enum(DATA_ENDPOINTS)) }).strict().transform((b) => b.endpoints),
]);

function badRequest(message: string, issues?: unknown): Reply {
  return json(400, { code: 400, message, ...(issues ? { issues } : {}) });
}

function parseWith<T>(schema: z.ZodType<T>, body: unknown): T {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  throw new ConfigError(result.error.issues.map((i) => ({ path: i.path.map(String).join('.') || 'body', message: i.message })));
}

/** `{}` and an empty body mean "clear", like `undefined` in the programmatic API. */
function emptyToNull(body: unknown): unknown {
  return body === undefined || (typeof body === 'object' && body !== null && Object.keys(body).length === 0) ? null : body;
}

function scenarioArgs(name: keyof ScenarioControls, body: unknown): unknown[] {
  const names = SCENARIO_ARGS[name];
  if (body === undefined || body === null) return [];
  if (Array.isArray(body)) return body;
  if (typeof body !== 'object') throw new ConfigError([{ path: 'body', message: 'must be a JSON object of named arguments or an array' }]);
  const unknown = Object.keys(body).filter((k) => !names.includes(k));
  if (unknown.length > 0) {
    throw new ConfigError(unknown.map((k) => ({ path: k, message: `unknown argument (${name} takes ${names.join(', ')})` })));
  }
  return names.map((n) => (body as Record<string, unknown>)[n]);
}

type Route = (core: Core, body: unknown) => Reply;

const ROUTES: Record<string, Methods> = {
  state: { GET: (core) => json(200, stateSummary(core)) },
  requests: {
    GET: (core) => json(200, core.log.list()),
    DELETE: (core) => (core.log.clear(), json(200, { cleared: true })),
  },
  faults: {
    GET: (core) => json(200, core.faults.list()),
    POST: (core, body) => {
      const rules = (Array.isArray(body) ? body : [body]).map(parseFaultRule);
      for (const rule of rules) core.faults.add(rule);
      return json(200, core.faults.list());
    },
    DELETE: (core) => (core.faults.clear(), json(200, [])),
  },
  'token-expiry': {
    POST: (core, body) => {
      core.tokens.setExpiry(parseWith(TokenExpiryBody, emptyToNull(body)) ?? undefined);
      return json(200, { tokenExpiry: core.tokens.currentExpiry() ?? null });
    },
  },
  'rate-limit': {
    POST: (core, body) => {
      core.limiter.set(parseWith(RateLimitBody, emptyToNull(body)) ?? undefined);
      return json(200, { rateLimit: core.limiter.current() ?? null });
    },
  },
  'connector-pace': {
    POST: (core, body) => {
      core.connectorPace = checkConnectorPace((emptyToNull(body) ?? undefined) as ConnectorPace | undefined);
      return json(200, { connectorPace: core.connectorPace });
    },
  },
  forbid: {
    POST: (core, body) => {
      core.forbidden = new Set(parseWith(ForbidBody, body ?? []));
      return json(200, { forbidden: [...core.forbidden] });
    },
  },
};

function scenarioRoute(name: string | undefined): Route | undefined {
  if (name === undefined || !Object.hasOwn(SCENARIO_ARGS, name)) return undefined;
  const control = name as keyof ScenarioControls;
  return (core, body) => {
    const args = scenarioArgs(control, body);
    // The controls check their own arguments at run time (they also serve untyped callers).
    (core.scenario[control] as (...a: unknown[]) => void)(...args);
    return json(200, { ok: true });
  };
}

type Methods = Partial<Record<string, Route>>;

function adminRoute(segments: readonly string[]): Methods | undefined {
  const [first = '', second, ...rest] = segments;
  if (first === 'scenario') {
    const control = rest.length === 0 ? scenarioRoute(second) : undefined;
    return control ? { POST: control } : undefined;
  }
  return second === undefined && Object.hasOwn(ROUTES, first) ? ROUTES[first] : undefined;
}

export async function serveAdmin(core: Core, req: IncomingMessage, segments: readonly string[]): Promise<Reply> {
  const byMethod = adminRoute(segments);
  if (!byMethod) return json(404, { code: 404, message: `no admin endpoint /_admin/${segments.join('/')}` });
  const method = req.method ?? '';
  const handler = Object.hasOwn(byMethod, method) ? byMethod[method] : undefined;
  if (!handler) return { ...json(405, { code: 405, message: 'Method Not Allowed' }), headers: { Allow: Object.keys(byMethod).join(', ') } };
  const text = await readBody(req, ADMIN_BODY_LIMIT);
  if (text === undefined) return json(413, { code: 413, message: 'Request body too large' });
  let body: unknown;
  try {
    body = text.trim() === '' ? undefined : JSON.parse(text);
  } catch {
    return badRequest('request body is not valid JSON');
  }
  try {
    return handler(core, body);
  } catch (err) {
    if (err instanceof ConfigError) return badRequest(err.issues.map((i) => `${i.path}: ${i.message}`).join('; '), err.issues);
    throw err;
  }
}
