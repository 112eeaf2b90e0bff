/**
 * One CMDB request, in the order a real deployment would meet it: rate limit, injected faults (as
 * a proxy in front would), method, token endpoint or bearer check, 403, then the data. Every request
 * is recorded with its raw path and query and the status it got (0 for a reset).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DataEndpoint, EndpointName } from '../api/endpoints.js';
import type { RequestRecord } from './api.js';
import type { Core } from './core.js';
import { faultEffect, type SimulatorFaultRule } from './faults.js';
import { dataReply } from './handlers.js';
import { codingFor, errorReply, flatHeaders, json, readBody, sendEncoded, type Reply } from './http-io.js';
import type { Route } from './routes.js';
import { sendDrip, sendOversize } from './streams.js';

/** Answers written over time (faults.ts FaultEffect): a drip or an oversize body. */
type Streamed = { kind: 'drip'; reply: Reply; everyMs: number } | { kind: 'oversize'; bytes: number; chunked: boolean; encoding?: string };

const TOKEN_BODY_LIMIT = 64 * 1024;
/** A data query body: a few criteria, never megabytes. */
const QUERY_BODY_LIMIT = 256 * 1024;
const INVALID_TOKEN = { code: 401001, message: 'Invalid token' };

function delay(core: Core, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      core.timers.delete(timer);
      resolve();
    }, ms);
    core.timers.add(timer);
  });
}

async function tokenReply(core: Core, req: IncomingMessage): Promise<Reply> {
  const text = await readBody(req, TOKEN_BODY_LIMIT);
  if (text === undefined) return errorReply(413, 'Request body too large');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return errorReply(400, 'Malformed request body: not JSON');
  }
  const fields = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  // The API documentation writes the key clientID in one place and clientId in another: accept both.
  const clientId = fields.clientID ?? fields.clientId;
  if (typeof clientId !== 'string' || typeof fields.secret !== 'string') {
    return errorReply(400, 'Malformed request body: clientID and secret are required');
  }
  if (clientId !== core.clientId || fields.secret !== core.secret) {
    return errorReply(401, 'Invalid client credentials', 401002);
  }
  return json(200, { code: 200, data: { token: core.tokens.issue() }, message: 'success' });
}

function normalBody(core: Core, endpoint: EndpointName, query: URLSearchParams, arg?: string, body?: string): string {
  // A cut-short token answer must not carry a token that works.
  if (endpoint === 'access_token') return JSON.stringify({ code: 200, data: { token: 'x'.repeat(32) }, message: 'success' });
  return dataReply(endpoint, handlerContext(core), query, arg, body).body;
}

function handlerContext(core: Core) {
  return {
    data: core.data,
    nowMs: core.timeline.now(),
    connectorPageSize: core.connectorPageSize,
    actionPageSize: core.actionPageSize,
    ignoreSort: core.ignoreSort,
  };
}

function rateLimited(core: Core): Reply | undefined {
  const admission = core.limiter.admit();
  if (admission.admitted) return undefined;
  const reply = errorReply(429, 'Too Many Requests');
  if (admission.retryAfterSeconds !== undefined) reply.headers = { 'Retry-After': String(admission.retryAfterSeconds) };
  return reply;
}

/** `body`: the request body of a data query, read before anything else is decided. */
type Target = { route: Route; rawPath: string; rawQuery: string; body?: string };

async function answer(core: Core, req: IncomingMessage, { route, rawPath, rawQuery, body }: Target): Promise<Reply | Streamed | 'reset'> {
  if (route.kind === 'bad_path') return errorReply(400, 'Malformed percent-encoding in path');
  const limited = rateLimited(core);
  if (limited) return limited;
  if (route.kind !== 'cmdb') return errorReply(404, 'Not Found');
  if (req.method !== route.method) return { ...errorReply(405, 'Method Not Allowed'), headers: { Allow: route.method } };

  const rule = core.faults.take(route.endpoint, rawPath, rawQuery);
  const reply = await answerWith(core, req, route, new URLSearchParams(rawQuery), rule, body);
  // A fault's Content-Encoding applies to whatever is answered (the normal answer included).
  const encoding = rule?.contentEncoding;
  return encoding !== undefined && reply !== 'reset' && !('kind' in reply) ? { ...reply, encoding } : reply;
}

async function answerWith(
  core: Core,
  req: IncomingMessage,
  route: Extract<Route, { kind: 'cmdb' }>,
  query: URLSearchParams,
  rule: SimulatorFaultRule | undefined,
  body: string | undefined,
): Promise<Reply | Streamed | 'reset'> {
  if (rule?.hold) await core.faults.released();
  if (rule?.latencyMs) await delay(core, rule.latencyMs);
  if (rule) {
    const effect = faultEffect(rule, route.endpoint, () => normalBody(core, route.endpoint, query, route.arg, body), core.timeline.now());
    if (effect.kind === 'reset') return 'reset';
    if (effect.kind === 'reply') return effect.reply;
    if (effect.kind === 'drip' || effect.kind === 'oversize') return effect;
  }

  if (route.endpoint === 'access_token') return tokenReply(core, req);
  if (!core.tokens.authorize(req.headers.authorization)) {
    return { ...json(401, INVALID_TOKEN), headers: { 'WWW-Authenticate': 'Bearer' } };
  }
  const endpoint: DataEndpoint = route.endpoint;
  if (core.forbidden.has(endpoint)) return errorReply(403, 'Forbidden');
  const reply = dataReply(endpoint, handlerContext(core), query, route.arg, body);
  if (endpoint === 'connector' && reply.status === 200) await connectorPace(core, reply);
  return reply;
}

/** How long connectorPace.holdAboveRows holds a page: longer than any client timeout (the timer ends on close). */
const HELD_PAGE_MS = 600_000;

/** The real service's pace on the connector history: rows written during the read, time per row. */
async function connectorPace(core: Core, reply: Reply): Promise<void> {
  const { msPerRow = 0, baseMs = 0, insertsPerPage = 0, holdAboveRows } = core.connectorPace;
  const names = [...core.data.connectors.keys()];
  for (let i = 0; i < insertsPerPage && names.length > 0; i++) {
    // On a stopped clock each write moves it on a second: rows written during a read are newer than every row before.
    if (!core.live) core.scenario.advance(1);
    core.scenario.runConnector(names[core.insertCursor++ % names.length] as string, 'Success');
  }
  const rows = reply.rows ?? 0;
  const ms = holdAboveRows !== undefined && rows > holdAboveRows ? HELD_PAGE_MS : baseMs + msPerRow * rows;
  if (ms > 0) await delay(core, ms);
}

export async function serveCmdb(core: Core, req: IncomingMessage, res: ServerResponse, target: Target): Promise<void> {
  const record: RequestRecord = {
    method: req.method ?? '',
    rawPath: target.rawPath,
    rawQuery: target.rawQuery,
    endpoint: target.route.kind === 'cmdb' ? target.route.endpoint : null,
    headers: flatHeaders(req),
    status: 0,
    at: core.timeline.now(),
    bytes: 0,
  };
  core.log.add(record);
  let read = target;
  if (target.route.kind === 'cmdb' && target.route.endpoint === 'data_query' && req.method === 'POST') {
    const body = await readBody(req, QUERY_BODY_LIMIT);
    if (body === undefined) {
      record.status = 413;
      record.bytes = await sendEncoded(res, errorReply(413, 'Request body too large'), undefined, false);
      return;
    }
    // The query a count was asked for: tests and the benchmark count requests per query.
    record.body = body;
    read = { ...target, body };
  }
  const reply = await answer(core, req, read);
  if (reply === 'reset') {
    req.socket.destroy();
    return;
  }
  if ('kind' in reply) {
    record.status = reply.kind === 'drip' ? reply.reply.status : 200;
    record.bytes =
      reply.kind === 'drip'
        ? await sendDrip(res, reply.reply, reply.everyMs, core.timers)
        : await sendOversize(res, reply.bytes, reply.chunked, reply.encoding);
    return;
  }
  record.status = reply.status;
  const coding = codingFor(reply, core.compression, req.headers['accept-encoding']);
  record.bytes = await sendEncoded(res, reply, coding, core.compression === 'gzip-chunked');
}
