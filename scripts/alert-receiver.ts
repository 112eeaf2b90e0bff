/**
 * A webhook receiver for Alertmanager: an HTTP server on a loopback port that hands every
 * notification posted to it (the webhook payload, version 4) to `onNotification`. The demo prints
 * them; the end-to-end tests keep them. A receiver posts to <url>/<receiver name>.
 */
import { createServer, type Server } from 'node:http';
import { alertObject } from './rules/problems.js';

/** One notification as a webhook receiver gets it (Alertmanager's webhook payload). */
export interface Notification {
  /** The Alertmanager receiver it was sent for: the path it was posted to. */
  readonly receiver: string;
  readonly status: 'firing' | 'resolved';
  readonly groupLabels: Record<string, string>;
  readonly commonLabels: Record<string, string>;
  readonly commonAnnotations: Record<string, string>;
  readonly alerts: ReadonlyArray<{
    readonly status: 'firing' | 'resolved';
    readonly labels: Record<string, string>;
    readonly annotations: Record<string, string>;
    readonly startsAt: string;
    readonly endsAt: string;
  }>;
  /** Milliseconds since the epoch, when it arrived. */
  readonly at: number;
}

export interface WebhookReceiver {
  /** http://127.0.0.1:<port> */
  readonly url: string;
  close(): Promise<void>;
}

/** Bodies above this are refused: a notification is a few kilobytes. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

export async function startWebhookReceiver(onNotification: (n: Notification) => void, port = 0): Promise<WebhookReceiver> {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY_BYTES) chunks.push(c);
    });
    req.on('end', () => {
      let body: Omit<Notification, 'receiver' | 'at'>;
      try {
        if (req.method !== 'POST' || size > MAX_BODY_BYTES) throw new Error('not a notification');
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Omit<Notification, 'receiver' | 'at'>;
      } catch {
        res.writeHead(400).end();
        return;
      }
      res.writeHead(200).end();
      onNotification({ ...body, receiver: decodeURIComponent((req.url ?? '/').slice(1)), at: Date.now() });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  return {
    url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function since(iso: string): string {
  return `${iso.slice(0, 16).replace('T', ' ')} UTC`;
}

/**
 * A notification in a few lines for a terminal: what the shipped templates say (stack, what broke,
 * since when, how many, each alert's object and summary), from the payload itself.
 */
export function describeNotification(n: Notification): string {
  const firing = n.alerts.filter((a) => a.status === 'firing');
  const where = n.groupLabels.stack ? `stack ${n.groupLabels.stack}` : `exporter ${n.commonLabels.instance ?? ''}`.trim();
  const what = n.groupLabels.connector ? `connector ${n.groupLabels.connector}` : (n.groupLabels.problem ?? n.commonLabels.alertname ?? '?');
  const state = n.status === 'resolved' ? 'RESOLVED' : (n.commonLabels.severity ?? 'firing').toUpperCase();
  const first = [...n.alerts].sort((a, b) => a.startsAt.localeCompare(b.startsAt))[0];
  const head = `[${state}] ${where}: ${what} (receiver ${n.receiver}; since ${first ? since(first.startsAt) : '?'}; ${firing.length} firing, ${n.alerts.length - firing.length} resolved)`;
  // Each alert as the templates list it: its object (from its labels), then its static summary.
  const lines = n.alerts.map((a) => `    ${a.status === 'resolved' ? 'resolved: ' : ''}${a.labels.alertname ?? '?'} on ${alertObject(a.labels)}: ${a.annotations.summary ?? ''}`);
  const runbook = n.alerts[0]?.annotations.runbook_url;
  return [head, ...lines, ...(runbook ? [`    runbook: ${runbook}`] : [])].join('\n');
}
