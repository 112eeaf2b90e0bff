/**
 * The remote-write client against a node:http(s) receiver on loopback that records what it gets:
 * the protocol's headers, basic auth, bearer token, extra headers and client certificates as a
 * Prometheus remote_write section sends them; retries with back-off on 5xx and 429 (Retry-After),
 * a 4xx refusal stopping at once; and the target check against stand-ins of the Prometheus and
 * VictoriaMetrics status APIs.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttp, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttps } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { uncompressSync } from 'snappy';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RemoteWriteClient, RemoteWriteError, type RetryNote } from '../../src/backfill/remote-write.js';
import { remoteWriteSettings, type RemoteWriteSettings } from '../../src/backfill/remote-write-settings.js';
import { chunksOf, REMOTE_WRITE_SHARDS, shardOf } from '../../src/backfill/remote-write-sink.js';
import { checkTarget, prometheusDuration, TargetRefusal, victoriaRetention } from '../../src/backfill/target-check.js';
import { encodeLabels, writeRequestBody } from '../../src/backfill/write-request.js';
import { makeCa, makeCert } from '../helpers/certs.js';

interface Received {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: Buffer;
  readonly clientCert?: string;
}

type Handler = (req: Received, res: ServerResponse) => void;

let dir: string;
const servers: Server[] = [];

function listen(server: Server, handler: () => Handler, seen: Received[]): Promise<string> {
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const peer = (req.socket as { getPeerCertificate?: () => { subject?: { CN?: string } } }).getPeerCertificate?.();
      const r: Received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks), ...(peer?.subject?.CN ? { clientCert: peer.subject.CN } : {}) };
      seen.push(r);
      handler()(r, res);
    });
  });
  servers.push(server);
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(String((server.address() as AddressInfo).port))));
}

function settings(url: string, over: Partial<RemoteWriteSettings> = {}): RemoteWriteSettings {
  return { url, headers: {}, tls: { insecureSkipVerify: false }, timeoutSeconds: 5, maxSamplesPerSend: 100, retryForSeconds: 60, ...over };
}

const body = writeRequestBody([{ labels: encodeLabels({ __name__: 'cmdb_assets', stack: 's' }), timestamps: [1_700_000_000_000], values: [42] }]);
const noWait = () => 0;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cmdb-remote-write-'));
});

afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  rmSync(dir, { recursive: true, force: true });
});

describe('remote write client', () => {
  it('posts snappy protobuf with the protocol headers, basic auth and extra headers', async () => {
    const seen: Received[] = [];
    const port = await listen(createHttp(), () => (_r, res) => res.writeHead(204).end(), seen);
    writeFileSync(join(dir, 'password'), 'pa55word\n');
    const s = remoteWriteSettings({
      'remote-write.url': `http://127.0.0.1:${port}/api/v1/write`,
      'remote-write.basic-auth.username': 'backfill',
      'remote-write.basic-auth.password-file': join(dir, 'password'),
      'remote-write.header': ['X-Scope-OrgID: tenant-1'],
    });
    const client = new RemoteWriteClient(s as RemoteWriteSettings);
    expect(await client.send(body)).toBe(1);
    await client.close();
    const r = seen[0] as Received;
    expect(r.method).toBe('POST');
    expect(r.url).toBe('/api/v1/write');
    expect(r.headers['content-type']).toBe('application/x-protobuf');
    expect(r.headers['content-encoding']).toBe('snappy');
    expect(r.headers['x-prometheus-remote-write-version']).toBe('0.1.0');
    expect(r.headers['x-scope-orgid']).toBe('tenant-1');
    expect(r.headers.authorization).toBe(`Basic ${Buffer.from('backfill:pa55word').toString('base64')}`);
    expect((uncompressSync(r.body) as Buffer).length).toBeGreaterThan(10);
  });

  it('sends the bearer token from its file, and a client certificate to an HTTPS receiver with its own CA', async () => {
    makeCa(dir);
    makeCert(dir, 'server');
    makeCert(dir, 'client', { client: true, cn: 'backfill-client' });
    const seen: Received[] = [];
    const server = createHttps({ cert: readFileSync(join(dir, 'server.crt')), key: readFileSync(join(dir, 'server.key')), ca: readFileSync(join(dir, 'ca.crt')), requestCert: true, rejectUnauthorized: true });
    const port = await listen(server, () => (_r, res) => res.writeHead(200).end(), seen);
    writeFileSync(join(dir, 'token'), 's3cret-token');
    const s = remoteWriteSettings({
      'remote-write.url': `https://127.0.0.1:${port}/api/v1/write`,
      'remote-write.bearer-token-file': join(dir, 'token'),
      'remote-write.tls.ca-file': join(dir, 'ca.crt'),
      'remote-write.tls.cert-file': join(dir, 'client.crt'),
      'remote-write.tls.key-file': join(dir, 'client.key'),
    });
    const client = new RemoteWriteClient(s as RemoteWriteSettings);
    await client.send(body);
    await client.close();
    expect(seen[0]?.headers.authorization).toBe('Bearer s3cret-token');
    expect(seen[0]?.clientCert).toBe('backfill-client');
    // Without the CA the receiver's certificate is not trusted: the send fails, naming why.
    const untrusted = new RemoteWriteClient(settings(`https://127.0.0.1:${port}/api/v1/write`, { retryForSeconds: 1 }), { random: noWait });
    await expect(untrusted.send(body)).rejects.toThrow(/did not take the request within 1s \(--remote-write.retry-for; \d+ attempts\): .*(certificate|self.signed)/i);
    await untrusted.close();
  });

  it('retries 5xx and 429 with back-off (Retry-After honoured), then succeeds', async () => {
    const seen: Received[] = [];
    const answers = [503, 429, 500, 204];
    const port = await listen(
      createHttp(),
      () => (_r, res) => {
        const status = answers.shift() ?? 204;
        res.writeHead(status, status === 429 ? { 'Retry-After': '0' } : {}).end(status >= 400 ? 'busy' : '');
      },
      seen,
    );
    const client = new RemoteWriteClient(settings(`http://127.0.0.1:${port}/api/v1/write`), { random: noWait });
    expect(await client.send(body)).toBe(4);
    await client.close();
    expect(seen).toHaveLength(4);
    expect(new Set(seen.map((r) => r.body.toString('base64')))).toEqual(new Set([body.toString('base64')]));
  });

  it('a 4xx is the target refusing the samples: no retry, its answer in the error', async () => {
    const seen: Received[] = [];
    const port = await listen(createHttp(), () => (_r, res) => res.writeHead(400).end('out of bounds'), seen);
    const client = new RemoteWriteClient(settings(`http://127.0.0.1:${port}/api/v1/write`), { random: noWait });
    const e = await client.send(body).catch((x: unknown) => x);
    await client.close();
    expect(e).toBeInstanceOf(RemoteWriteError);
    expect((e as Error).message).toContain('refused the samples: 400 out of bounds');
    expect(seen).toHaveLength(1);
  });

  it('gives up on a target that keeps failing once --remote-write.retry-for is over, not after a count of attempts', async () => {
    const seen: Received[] = [];
    const port = await listen(createHttp(), () => (_r, res) => res.writeHead(503).end('down'), seen);
    const client = new RemoteWriteClient(settings(`http://127.0.0.1:${port}/api/v1/write`, { retryForSeconds: 2 }), { random: noWait });
    const started = Date.now();
    await expect(client.send(body)).rejects.toThrow(/did not take the request within 2s \(--remote-write.retry-for; \d+ attempts\): 503 down/);
    await client.close();
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
    expect(seen.length).toBeGreaterThan(2);
  });

  it("reads Retry-After on any 5xx and 429 against the server's Date header, and waits what it asks", async () => {
    // A server whose clock is an hour behind ours: against our clock its date would be long past.
    const serverNow = Date.now() - 3_600_000;
    const answers: Array<[number, Record<string, string>]> = [
      [502, { Date: new Date(serverNow).toUTCString(), 'Retry-After': new Date(serverNow + 2000).toUTCString() }],
      [429, { 'Retry-After': '1' }],
      [204, {}],
    ];
    const port = await listen(createHttp(), () => (_r, res) => {
      const [status, headers] = answers.shift() ?? [204, {}];
      res.writeHead(status, headers).end();
    }, []);
    const notes: RetryNote[] = [];
    const client = new RemoteWriteClient(settings(`http://127.0.0.1:${port}/api/v1/write`), { random: noWait, onRetry: (n) => notes.push(n) });
    expect(await client.send(body)).toBe(3);
    await client.close();
    expect(notes.map((n) => [n.what, n.why, n.waitMs])).toEqual([
      ['POST /api/v1/write', '502', 2000],
      ['POST /api/v1/write', '429', 1000],
    ]);
  });
});

describe('what the target keeps', () => {
  it('reads Prometheus and VictoriaMetrics durations', () => {
    expect(prometheusDuration('30d')).toBe(30 * 86_400);
    expect(prometheusDuration('1y2w')).toBe(365 * 86_400 + 14 * 86_400);
    expect(prometheusDuration('0s')).toBe(0);
    expect(prometheusDuration('soon')).toBeUndefined();
    expect(victoriaRetention(undefined)).toBe(31 * 86_400);
    expect(victoriaRetention('3')).toBe(3 * 31 * 86_400);
    expect(victoriaRetention('100y')).toBe(100 * 365 * 86_400);
  });

  /** A stand-in answering the write probe and the status API of a Prometheus with this configuration. */
  async function prometheusLike(yaml: string, flags: Record<string, string> = {}): Promise<string> {
    const port = await listen(
      createHttp(),
      () => (r, res) => {
        const json = (data: unknown) => res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ status: 'success', data }));
        if (r.url === '/api/v1/write') res.writeHead(204).end();
        else if (r.url === '/api/v1/status/buildinfo') json({ version: '2.42.0' });
        else if (r.url === '/api/v1/status/config') json({ yaml });
        else if (r.url === '/api/v1/status/flags') json(flags);
        else res.writeHead(404).end();
      },
      [],
    );
    return `http://127.0.0.1:${port}/api/v1/write`;
  }

  const now = 1_800_000_000;

  it('refuses a Prometheus whose out-of-order window is shorter than the range, saying what to set', async () => {
    const client = new RemoteWriteClient(settings(await prometheusLike('storage:\n  tsdb:\n    out_of_order_time_window: 2d\n')));
    const e = await checkTarget(client, { oldestSeconds: now - 14 * 86_400, now }).catch((x: unknown) => x);
    await client.close();
    expect(e).toBeInstanceOf(TargetRefusal);
    expect((e as Error).message).toContain('takes samples up to 2d old (out_of_order_time_window 2d), but the backfill reaches back 14d');
    expect((e as Error).message).toContain('out_of_order_time_window');
  });

  it('refuses a range past the retention even with a long window; takes one inside both', async () => {
    const url = await prometheusLike('storage:\n  tsdb:\n    out_of_order_time_window: 60d\n', { 'storage.tsdb.retention.time': '7d' });
    const client = new RemoteWriteClient(settings(url));
    await expect(checkTarget(client, { oldestSeconds: now - 14 * 86_400, now })).rejects.toThrow('(retention 7d)');
    const ok = await checkTarget(client, { oldestSeconds: now - 6 * 86_400, now });
    await client.close();
    expect(ok.kind).toBe('prometheus');
  });

  it('knows a VictoriaMetrics that answers Prometheus\' buildinfo with a Prometheus version (1.145 says 2.24.0) from a Prometheus', async () => {
    // As VictoriaMetrics 1.145 answers: buildinfo for Grafana, /flags as text, /-/healthy naming it, no /api/v1/status/flags.
    const port = await listen(
      createHttp(),
      () => (r, res) => {
        if (r.url === '/api/v1/write') res.writeHead(204).end();
        else if (r.url === '/api/v1/status/buildinfo') res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"status":"success","data":{"version":"2.24.0"}}');
        else if (r.url === '/api/v1/status/config') res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"status":"success","data":{"yaml":""}}');
        else if (r.url === '/flags') res.writeHead(200).end('-retentionPeriod="100y"\n-storageDataPath="/x"\n');
        else if (r.url === '/-/healthy') res.writeHead(200).end('VictoriaMetrics is Healthy.\n');
        else res.writeHead(400).end(`unsupported path requested: ${JSON.stringify(r.url)}`);
      },
      [],
    );
    const client = new RemoteWriteClient(settings(`http://127.0.0.1:${port}/api/v1/write`));
    const facts = await checkTarget(client, { oldestSeconds: now - 40 * 86_400, now });
    await client.close();
    expect(facts.kind).toBe('victoriametrics');
    expect(facts.note).toContain('VictoriaMetrics: keeps 36500d (-retentionPeriod 100y)');
  });

  it('a receiver without a status API is sent to, once it takes an empty request; one that refuses the credentials is not', async () => {
    const seen: Received[] = [];
    let status = 204;
    const port = await listen(createHttp(), () => (r, res) => res.writeHead(r.url === '/api/v1/push' ? status : 404).end(), seen);
    const client = new RemoteWriteClient(settings(`http://127.0.0.1:${port}/api/v1/push`));
    expect((await checkTarget(client, { oldestSeconds: now - 86_400, now })).kind).toBe('other');
    status = 401;
    await expect(checkTarget(client, { oldestSeconds: now - 86_400, now })).rejects.toThrow('refused the credentials (401)');
    status = 404;
    await expect(checkTarget(client, { oldestSeconds: now - 86_400, now })).rejects.toThrow('no remote-write receiver');
    await client.close();
  });

  it('the pre-flight check waits out a target that is restarting (503, no connection) as a batch would; only a 4xx is a refusal', async () => {
    const seen: Received[] = [];
    const answers = [503, 503, 503];
    const port = await listen(createHttp(), () => (r, res) => res.writeHead(r.url === '/api/v1/push' ? (answers.shift() ?? 204) : 404).end(), seen);
    const client = new RemoteWriteClient(settings(`http://127.0.0.1:${port}/api/v1/push`), { random: noWait });
    expect((await checkTarget(client, { oldestSeconds: now - 86_400, now })).kind).toBe('other');
    expect(seen.filter((r) => r.url === '/api/v1/push')).toHaveLength(4);
    await client.close();
    // Down for longer than --remote-write.retry-for: not a refusal (exit 2) but a failure to write.
    const down = await listen(createHttp(), () => (_r, res) => res.writeHead(503).end('starting'), []);
    const patient = new RemoteWriteClient(settings(`http://127.0.0.1:${down}/api/v1/push`, { retryForSeconds: 1 }), { random: noWait });
    const e = await checkTarget(patient, { oldestSeconds: now - 86_400, now }).catch((x: unknown) => x);
    await patient.close();
    expect(e).toBeInstanceOf(RemoteWriteError);
    expect(e).not.toBeInstanceOf(TargetRefusal);
    expect((e as Error).message).toContain('within 1s');
  });
});

describe('shards by series', () => {
  it('a series is always in the same shard (a hash of its labels), and the series spread over the shards', () => {
    const labels = Array.from({ length: 400 }, (_, i) => encodeLabels({ __name__: 'cmdb_connector_info', stack: 's', connector: `c${i}` }));
    const shards = labels.map((l) => shardOf(l, REMOTE_WRITE_SHARDS));
    expect(labels.map((l) => shardOf(Buffer.from(l), REMOTE_WRITE_SHARDS))).toEqual(shards);
    for (let k = 0; k < REMOTE_WRITE_SHARDS; k++) expect(shards.filter((s) => s === k).length).toBeGreaterThan(60);
  });

  it("a shard's chunks are named by unit and shard, so that a window written again skips exactly those the target took", () => {
    const series = (source: string, n: number) => ({ labels: encodeLabels({ __name__: 'x', source }), shard: 2, source, timestamps: Array.from({ length: n }, (_, i) => i * 1000), values: Array.from({ length: n }, () => 1) });
    const chunks = chunksOf([series('s:counts/2026-11-01', 150), series('s:actions', 30)], 100, 2);
    expect(chunks.map((c) => [c.id, c.samples])).toEqual([
      ['s:actions#2.0', 30],
      ['s:counts/2026-11-01#2.0', 100],
      ['s:counts/2026-11-01#2.1', 50],
    ]);
  });
});

