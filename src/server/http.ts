/**
 * The exporter's HTTP server. /metrics serves what the scheduler gathered and never waits on the
 * CMDB; /healthz says the process runs; /readyz says whether every enabled endpoint of every stack
 * the process started with has finished its first poll (stacks added later are listed as joining);
 * / is a landing page; POST /-/reload re-reads the configuration when enabled.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import express, { type Request, type Response } from 'express';
import Negotiator from 'negotiator';
import type { Logger } from '../logger.js';
import type { BodyKind, Scope } from '../exposition/formats.js';
import { GZIP_LEVEL, type ScrapeBody, type ScrapeResponse } from '../exposition/responses.js';
import type { DocsPages } from './docs.js';
import { lastLookOf, renderLanding, SEEN_PARAM, type LandingModel } from './landing.js';
import { negotiate } from './negotiate.js';
import type { TargetGroup } from './sd.js';
import { pathOf } from './limits.js';
import { requestListener, secureServer, type Protection } from './protection.js';

const gzipAsync = promisify(gzip);

export interface Readiness {
  readonly ready: boolean;
  readonly pending: ReadonlyArray<{ readonly stack: string; readonly endpoint: string }>;
  /** Endpoints of stacks added after start (reload, stacksDir) without a first poll yet: shown, never unready. */
  readonly joining?: ReadonlyArray<{ readonly stack: string; readonly endpoint: string }>;
}

export type ReloadOutcome = { ok: true; message: string } | { ok: false; message: string };

export interface ServerDeps {
  /** The /metrics response in a format, both encodings made once per change (src/exposition/formats.ts). */
  readonly metrics: (kind?: BodyKind) => Promise<ScrapeResponse>;
  /** /metrics?stack=NAME and ?only=exporter; without it the query is ignored. */
  readonly perStack?: PerStackMetrics;
  /** The HTTP service discovery list (GET /sd); without it /sd is not served. */
  readonly sd?: () => readonly TargetGroup[];
  readonly readiness: () => Readiness;
  readonly landing: () => LandingModel;
  /** Undefined when reloading over HTTP is disabled. */
  readonly reload?: () => Promise<ReloadOutcome>;
  readonly logger: Logger;
  /** Where the exposition is served (--web.telemetry-path), default /metrics. */
  readonly telemetryPath?: string;
  /** The packaged docs, rendered at /docs/<name> (the status page's runbooks); without it /docs is not served. */
  readonly docs?: DocsPages;
}

/**
 * The content coding to answer with: gzip when the client accepts it at least as much as identity,
 * by the q-values of Accept-Encoding (RFC 9110 §12.5.3, parsed by `negotiator`);
 * `gzip;q=0`, `identity`, an empty header or none get identity, and so does a client that refuses
 * both (a 406 would only lose the scrape). The old name `x-gzip` alone gets identity too (a `*`
 * would match it even after `gzip;q=0`).
 */
function chooseEncoding(req: IncomingMessage): 'gzip' | 'identity' {
  return new Negotiator(req).encoding(['gzip', 'identity']) === 'gzip' ? 'gzip' : 'identity';
}

/** Writes a prepared body with its length; the Buffer is shared with other responses, never changed. */
function writeBody(res: ServerResponse, body: ScrapeBody): void {
  res.setHeader('Content-Length', body.length);
  const whole = body.whole();
  if (whole) {
    res.end(whole);
    return;
  }
  res.cork();
  for (const part of body.parts) res.write(part);
  res.end(); // uncorks: the parts go out in one writev
}

export type MetricsHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** One stack's exposition, or the exporter's own metrics alone (src/exposition/per-stack.ts). */
export interface PerStackMetrics {
  /** Undefined when this exporter does not poll the stack. */
  stack(name: string, kind?: BodyKind): Promise<ScrapeResponse> | undefined;
  exporter(kind?: BodyKind): Promise<ScrapeResponse>;
  /** Only the families named (`?name[]=`), of the whole exposition, a stack or the exporter; undefined for a stack not polled. */
  filtered?(names: readonly string[], scope: Scope, kind?: BodyKind): Promise<ScrapeResponse | undefined>;
}

/** What a query of the metrics path asks for: the whole exposition, one stack, or the exporter alone. */
export type MetricsSelection = (Scope & { names?: readonly string[] }) | { kind: 'bad'; message: string };

/**
 * `?stack=NAME` one stack, `?only=exporter` the exporter's own metrics, neither the whole exposition;
 * `?name[]=FAMILY` (repeatable) only those families, by their text-format name (as client_golang).
 * Other parameters are ignored (Prometheus may send its own `params`).
 */
export function metricsSelection(url: string | undefined): MetricsSelection {
  const q = url?.indexOf('?') ?? -1;
  if (url === undefined || q < 0) return { kind: 'all' };
  const params = new URLSearchParams(url.slice(q + 1));
  const stacks = params.getAll('stack');
  const only = params.getAll('only');
  if (stacks.length > 1) return { kind: 'bad', message: 'give one stack parameter, not several' };
  if (only.length > 1 || (only.length === 1 && only[0] !== 'exporter')) return { kind: 'bad', message: 'the only parameter takes one value: exporter' };
  if (stacks.length === 1 && only.length === 1) return { kind: 'bad', message: 'give either stack=NAME or only=exporter, not both' };
  const names = params.getAll('name[]');
  const named = names.length > 0 ? { names } : {};
  if (only.length === 1) return { kind: 'exporter', ...named };
  if (stacks.length === 1) return { kind: 'stack', stack: stacks[0] as string, ...named };
  return { kind: 'all', ...named };
}

/** Quoted and cut short: a client's text goes back only as a bounded, escaped string. */
const quoted = (text: string) => JSON.stringify(text.length > 100 ? `${text.slice(0, 100)}…` : text);

/**
 * GET /metrics: the shared response in the format (Accept, negotiate.ts) and the encoding asked for,
 * with Content-Length; with `?stack=NAME` one stack's, with `?only=exporter` the exporter's own
 * metrics alone, with `?name[]=` only the families named (made for the request). It needs nothing
 * of express, so listen() can serve it straight from node:http (see MetricsRoute).
 */
export function metricsHandler(metrics: ServerDeps['metrics'], perStack?: PerStackMetrics): MetricsHandler {
  return async (req, res) => {
    const selection = perStack ? metricsSelection(req.url) : ({ kind: 'all' } as const);
    const format = negotiate(req.headers.accept);
    let pending: Promise<ScrapeResponse> | undefined;
    if (selection.kind === 'bad') return refuse(res, 400, `${selection.message}\n`);
    const unknown = (stack: string) => refuse(res, 404, `unknown stack ${quoted(stack)}: this exporter does not poll it; GET /sd lists the stacks it serves\n`);
    if (selection.names && perStack?.filtered) {
      const filtered = await perStack.filtered(selection.names, selection, format.kind);
      if (!filtered) return unknown(selection.kind === 'stack' ? selection.stack : '');
      pending = Promise.resolve(filtered);
    } else if (selection.kind === 'stack') {
      pending = perStack?.stack(selection.stack, format.kind);
      if (!pending) return unknown(selection.stack);
    } else pending = selection.kind === 'exporter' ? perStack?.exporter(format.kind) : metrics(format.kind);
    const response = await (pending ?? metrics(format.kind));
    const encoding = chooseEncoding(req);
    const body = encoding === 'identity' ? response.plain : await response.gzip();
    res.setHeader('Content-Type', format.contentType);
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Vary', 'Accept, Accept-Encoding');
    if (encoding !== 'identity') res.setHeader('Content-Encoding', encoding);
    writeBody(res, body);
  };
}

function refuse(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/** A fresh text of `type` (express's res.type), gzipped when the client accepts it; never cached. */
async function sendText(req: Request, res: Response, type: string, text: string): Promise<void> {
  res.type(type);
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Vary', 'Accept-Encoding');
  const encoding = chooseEncoding(req);
  if (encoding !== 'identity') {
    res.setHeader('Content-Encoding', encoding);
    const zipped = await gzipAsync(text, { level: GZIP_LEVEL });
    res.setHeader('Content-Length', zipped.length);
    res.end(zipped);
    return;
  }
  res.send(text);
}

export function createHttpApp(deps: ServerDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');

  const telemetryPath = deps.telemetryPath ?? '/metrics';
  const serveMetrics = metricsHandler(deps.metrics, deps.perStack);
  app.get(telemetryPath, (req: Request, res: Response) => serveMetrics(req, res));

  const sd = deps.sd;
  if (sd) {
    // Prometheus' http_sd_configs: 200, application/json, the whole list every time ([] when empty).
    app.get('/sd', (req: Request, res: Response) => sendText(req, res, 'application/json', JSON.stringify(sd())));
  }

  app.get('/healthz', (_req, res) => {
    res.type('text/plain').send('ok\n');
  });

  app.get('/readyz', (_req, res) => {
    const r = deps.readiness();
    const joining = r.joining?.length ? { joining: r.joining } : {};
    res.status(r.ready ? 200 : 503).json(r.ready ? { status: 'ready', ...joining } : { status: 'starting', pending: r.pending, ...joining });
  });

  app.get('/', (req: Request, res: Response) => {
    const model = deps.landing();
    // The page's own refresh says when the page it replaces was made: what appeared since is new.
    const html = renderLanding(model, telemetryPath, lastLookOf(req.query[SEEN_PARAM], model.now));
    // At 200 stacks the page is about 0.9 MB of repetitive markup; gzip makes it under 2 % of that.
    return sendText(req, res, 'html', html);
  });

  const docs = deps.docs;
  if (docs) {
    app.get('/docs/:name', async (req: Request, res: Response) => {
      const html = docs.page(String(req.params.name));
      if (html === undefined) {
        res.status(404).type('text/plain').send(`no such page; the docs served here: ${docs.names().join(', ') || 'none (docs/ is not installed)'}\n`);
        return;
      }
      return sendText(req, res, 'html', html);
    });
  }

  app.post('/-/reload', async (_req, res) => {
    if (!deps.reload) {
      res.status(403).type('text/plain').send('reload over HTTP is disabled; set enableReload: true, or send SIGHUP\n');
      return;
    }
    const outcome = await deps.reload();
    res.status(outcome.ok ? 200 : 400).type('text/plain').send(`${outcome.message}\n`);
  });

  app.use((_req, res) => {
    res.status(404).type('text/plain').send(`not found: try ${telemetryPath}, ${sd ? '/sd, ' : ''}/healthz, /readyz or /\n`);
  });

  // Express 5 forwards rejected promises here; answer 500 without details, log it.
  app.use((err: unknown, _req: Request, res: Response, _next: express.NextFunction) => {
    deps.logger.error({ err }, 'HTTP handler failed');
    if (!res.headersSent) res.status(500).type('text/plain').send('internal error\n');
  });
  return app;
}

export interface Listening {
  readonly url: string;
  readonly server: Server;
  close(): Promise<void>;
}

/**
 * GET on the telemetry path served straight from node:http, ahead of express, whose routing costs
 * more per request than writing the pre-made body (docs/design.md, "Outside express"); any other
 * method or path goes to express. The web config's headers and basic authentication apply to it as
 * to every route (listen() guards the whole listener).
 */
export interface MetricsRoute {
  readonly path: string;
  readonly handler: MetricsHandler;
  readonly logger: Logger;
}

export interface ListenOptions {
  /** TLS, authentication, the request and connection caps and timeouts; none when absent. */
  readonly protection?: Protection;
  /** The /metrics fast path; without it express serves /metrics too. */
  readonly metrics?: MetricsRoute;
}

function routeMetrics(app: RequestListener, metrics: MetricsRoute): RequestListener {
  const serve: RequestListener = (req, res) => {
    metrics.handler(req, res).catch((err: unknown) => {
      metrics.logger.error({ err }, 'HTTP handler failed');
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain' }).end('internal error\n');
    });
  };
  return (req, res) => {
    if (req.method !== 'GET' || pathOf(req.url) !== metrics.path) return void app(req, res);
    serve(req, res);
  };
}

export async function listen(app: express.Express, host: string | undefined, port: number, opts: ListenOptions = {}): Promise<Listening> {
  const { protection, metrics } = opts;
  const routed: RequestListener = metrics ? routeMetrics(app, metrics) : app;
  const handler = protection ? requestListener(protection, routed) : routed;
  // Idle connections are checked every 2 s (Node's default, 30 s, would let headersTimeout slip).
  const server = protection?.tls
    ? createTlsServer({ ...protection.tlsOptions, connectionsCheckingInterval: 2000 }, handler)
    : createServer({ connectionsCheckingInterval: 2000 }, handler);
  const stopWatching = protection ? secureServer(server, protection) : () => undefined;
  server.listen({ port, host, backlog: protection?.limits.listenBacklog });
  try {
    // events.once rejects when the server emits 'error' first.
    await once(server, 'listening');
  } catch (err) {
    // Not listening (the address taken, not allowed): nothing of it is left running.
    stopWatching();
    server.close();
    throw err;
  }
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `${protection?.tls ? 'https' : 'http'}://${host === undefined || address.address === '::' || address.address === '0.0.0.0' ? 'localhost' : shown}:${address.port}`;
  return {
    url,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        stopWatching();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
