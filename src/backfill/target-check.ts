/**
 * Before a backfill sends anything: does the remote-write target take what it will send? A
 * Prometheus outside its out-of-order window and retention, or a VictoriaMetrics past its
 * -retentionPeriod, would drop older samples without a word, so such a range is refused here with
 * what to change. Other receivers (Mimir, Thanos) cannot be asked: the probe (an empty WriteRequest)
 * shows they answer and take the credentials (docs/backfill.md, "Remote write").
 */
import { parse } from 'yaml';
import { formatDuration } from '../config/durations.js';
import type { RemoteWriteClient } from './remote-write.js';
import { shownUrl } from './remote-write-settings.js';

const UNITS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86_400, w: 7 * 86_400, y: 365 * 86_400 };

/** A Prometheus duration (`30d`, `1y2w`, `90m`, `0s`) in seconds, or undefined. */
export function prometheusDuration(text: unknown): number | undefined {
  if (typeof text !== 'string' || text.trim() === '') return undefined;
  let total = 0;
  const re = /(\d+)(ms|s|m|h|d|w|y)/y;
  const t = text.trim();
  while (re.lastIndex < t.length) {
    const m = re.exec(t);
    if (!m) return undefined;
    total += Number(m[1]) * (UNITS[m[2] as string] as number);
  }
  return total;
}

/** VictoriaMetrics' -retentionPeriod: a number alone is months (31 days), else h, d, w, y. */
export function victoriaRetention(text: string | undefined): number {
  if (text === undefined) return 31 * 86_400;
  const m = /^(\d+(?:\.\d+)?)([hdwy]?)$/.exec(text.trim());
  if (!m) return 31 * 86_400;
  const n = Number(m[1]);
  return m[2] === '' ? n * 31 * 86_400 : n * (UNITS[m[2] as string] as number);
}

/** Prometheus' retention when --storage.tsdb.retention.time is not set. */
export const PROMETHEUS_RETENTION_SECONDS = 15 * 86_400;

export class TargetRefusal extends Error {}

export interface TargetFacts {
  readonly kind: 'prometheus' | 'victoriametrics' | 'other';
  /** Seconds back from now that the target keeps samples sent now, when known. */
  readonly acceptsBackSeconds?: number;
  /** What was checked, for the output. */
  readonly note: string;
}

/** The server's root for its status API: the write URL without /api/v1/write. */
export function statusBase(writeUrl: string): string | undefined {
  const u = new URL(writeUrl);
  const m = /^(.*)\/api\/v1\/write\/?$/.exec(u.pathname);
  return m ? `${u.origin}${m[1]}` : undefined;
}

async function json(client: RemoteWriteClient, url: string, stopping?: AbortSignal): Promise<unknown> {
  try {
    const r = await client.get(url, stopping);
    return r.status === 200 ? JSON.parse(r.text) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A Prometheus: its flags (`/api/v1/status/flags`, which VictoriaMetrics does not answer) and its
 * version. Asked after victoriaFacts: VictoriaMetrics answers `/api/v1/status/buildinfo` too, with
 * a Prometheus version of its own choosing (1.145 says "2.24.0", for Grafana's sake).
 */
async function prometheusFacts(client: RemoteWriteClient, base: string, stopping?: AbortSignal): Promise<TargetFacts | undefined> {
  const flags = (await json(client, `${base}/api/v1/status/flags`, stopping)) as { data?: Record<string, string> } | undefined;
  if (typeof flags?.data !== 'object' || flags.data === null) return undefined;
  const info = (await json(client, `${base}/api/v1/status/buildinfo`, stopping)) as { data?: { version?: string } } | undefined;
  const version = info?.data?.version;
  if (!version) return undefined;
  const config = (await json(client, `${base}/api/v1/status/config`, stopping)) as { data?: { yaml?: string } } | undefined;
  let ooo = 0;
  try {
    const tsdb = (parse(config?.data?.yaml ?? '') as { storage?: { tsdb?: { out_of_order_time_window?: string } } } | null)?.storage?.tsdb;
    ooo = prometheusDuration(tsdb?.out_of_order_time_window) ?? 0;
  } catch {
    // an unreadable configuration: no window known
  }
  const retention = prometheusDuration(flags.data['storage.tsdb.retention.time']) || PROMETHEUS_RETENTION_SECONDS;
  // Prometheus takes in order what is newer than about an hour before its newest sample.
  const back = Math.min(Math.max(ooo, 3600), retention);
  const why = ooo < retention ? `out_of_order_time_window ${formatDuration(ooo)}` : `retention ${formatDuration(retention)}`;
  return { kind: 'prometheus', acceptsBackSeconds: back, note: `Prometheus ${version}: takes samples up to ${formatDuration(back)} old (${why})` };
}

async function victoriaFacts(client: RemoteWriteClient, base: string, stopping?: AbortSignal): Promise<TargetFacts | undefined> {
  const flags = await client.get(`${base}/flags`, stopping).catch(() => undefined);
  if (flags?.status !== 200 || !/^-\w/m.test(flags.text)) return undefined;
  const healthy = await client.get(`${base}/-/healthy`, stopping).catch(() => undefined);
  if (!healthy || !/victoria/i.test(healthy.text)) return undefined;
  const period = /^-retentionPeriod="?([^"\n]*)"?$/m.exec(flags.text)?.[1];
  const back = victoriaRetention(period);
  return { kind: 'victoriametrics', acceptsBackSeconds: back, note: `VictoriaMetrics: keeps ${formatDuration(back)} (-retentionPeriod ${period ?? '1 (month), the default'})` };
}

/**
 * Probes the target and, where it can tell, what it keeps; TargetRefusal (with what to do) when it
 * refuses requests (a 4xx) or would drop samples of the range. One down or restarting is asked again
 * as a batch would be: then RemoteWriteError, which is not the flags' fault.
 */
export async function checkTarget(client: RemoteWriteClient, opts: { oldestSeconds: number; now: number; statusUrl?: string; stopping?: AbortSignal }): Promise<TargetFacts> {
  const url = shownUrl(client.settings.url);
  const probe = await client.probe(opts.stopping);
  if (probe.status === 404 || probe.status === 405) {
    throw new TargetRefusal(`--remote-write.url: no remote-write receiver at ${url} (${probe.status}): a Prometheus takes remote write when started with --web.enable-remote-write-receiver; VictoriaMetrics at /api/v1/write, Mimir at /api/v1/push, Thanos receive at /api/v1/receive`);
  }
  if (probe.status === 401 || probe.status === 403) {
    throw new TargetRefusal(`--remote-write.url: ${url} refused the credentials (${probe.status}): check --remote-write.basic-auth.* or --remote-write.bearer-token-file (and a tenant header such as --remote-write.header 'X-Scope-OrgID: …')`);
  }
  if (probe.status < 200 || probe.status >= 300) {
    throw new TargetRefusal(`--remote-write.url: ${url} answered an empty write request with ${probe.status} ${probe.text.trim().slice(0, 300)}`);
  }
  const base = opts.statusUrl?.replace(/\/+$/, '') ?? statusBase(client.settings.url);
  // VictoriaMetrics first: it answers Prometheus' buildinfo too (prometheusFacts).
  const facts = base ? ((await victoriaFacts(client, base, opts.stopping)) ?? (await prometheusFacts(client, base, opts.stopping))) : undefined;
  if (!facts) return { kind: 'other', note: `${url} takes write requests; what it keeps cannot be asked (no Prometheus or VictoriaMetrics status API): a batch it refuses stops the backfill with its answer` };
  const needed = opts.now - opts.oldestSeconds;
  if (facts.acceptsBackSeconds !== undefined && facts.acceptsBackSeconds < needed) {
    const fix =
      facts.kind === 'prometheus'
        ? `set storage: tsdb: out_of_order_time_window (and --storage.tsdb.retention.time if shorter) to at least ${formatDuration(Math.ceil(needed / 86_400) * 86_400)} in its configuration, or write blocks instead (leave out --remote-write.url)`
        : `start it with -retentionPeriod of at least ${Math.ceil(needed / 86_400)}d`;
    throw new TargetRefusal(`--remote-write.url: ${facts.note}, but the backfill reaches back ${formatDuration(Math.ceil(needed))}: it would refuse or drop the older samples. ${fix[0]?.toUpperCase()}${fix.slice(1)}, or shorten --from.`);
  }
  return facts;
}
