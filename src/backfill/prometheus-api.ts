/**
 * The few calls of the Prometheus HTTP API a backfill makes to the Prometheus it fills (or a
 * VictoriaMetrics, which answers the same query API): range queries, raw samples, the active
 * targets and, of a Prometheus, its version and retention.
 */
import { request } from 'undici';
import { PROMETHEUS_RETENTION_SECONDS, prometheusDuration } from './target-check.js';

export class PrometheusApiError extends Error {}

export interface RangeSeries {
  readonly metric: Readonly<Record<string, string>>;
  readonly values: ReadonlyArray<readonly [number, string]>;
}

/** Points a range query may return per series (Prometheus refuses more than 11,000). */
const MAX_POINTS = 10_000;

export class PrometheusApi {
  readonly url: string;

  constructor(url: string) {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw new PrometheusApiError(`--prometheus.url: ${JSON.stringify(url)} is not a URL (e.g. http://prometheus:9090)`);
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new PrometheusApiError(`--prometheus.url: must be http:// or https://, got ${u.protocol}`);
    this.url = `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
  }

  private async get<T>(path: string, params: Record<string, string> = {}): Promise<T> {
    const query = new URLSearchParams(params).toString();
    let status: number;
    let text: string;
    try {
      const r = await request(`${this.url}${path}${query ? `?${query}` : ''}`, { method: 'GET', signal: AbortSignal.timeout(120_000) });
      status = r.statusCode;
      text = await r.body.text();
    } catch (e) {
      throw new PrometheusApiError(`--prometheus.url: cannot reach ${this.url}: ${(e as Error).message}`);
    }
    let body: { status?: string; data?: T; error?: string };
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      throw new PrometheusApiError(`--prometheus.url: ${this.url}${path} answered ${status} with no Prometheus API reply: ${text.slice(0, 200)}`);
    }
    if (status !== 200 || body.status !== 'success') throw new PrometheusApiError(`--prometheus.url: ${this.url}${path} answered ${status}: ${body.error ?? text.slice(0, 200)}`);
    return body.data as T;
  }

  /** A range query over [start, end] at `step` seconds, in as many requests as the point limit needs. */
  async queryRange(expr: string, start: number, end: number, step: number): Promise<RangeSeries[]> {
    const bySeries = new Map<string, { metric: Record<string, string>; values: Array<[number, string]> }>();
    for (let from = start; from <= end; from += MAX_POINTS * step) {
      const to = Math.min(end, from + (MAX_POINTS - 1) * step);
      const data = await this.get<{ result: RangeSeries[] }>('/api/v1/query_range', { query: expr, start: String(from), end: String(to), step: String(step) });
      for (const s of data.result) {
        const key = JSON.stringify(s.metric);
        const known = bySeries.get(key) ?? { metric: { ...s.metric }, values: [] };
        for (const v of s.values) known.values.push([v[0], v[1]]);
        bySeries.set(key, known);
      }
    }
    return [...bySeries.values()];
  }

  /** The raw samples of a range selector at `time`. */
  async samples(selector: string, time: number): Promise<RangeSeries[]> {
    const data = await this.get<{ resultType: string; result: RangeSeries[] }>('/api/v1/query', { query: selector, time: String(time) });
    return data.resultType === 'matrix' ? data.result : [];
  }

  /** The active targets: their labels, and their scrape interval where the server says it (Prometheus 2.35 and later). */
  async targets(): Promise<ActiveTarget[]> {
    const data = await this.get<{ activeTargets: Array<{ labels: Record<string, string>; scrapeInterval?: string }> }>('/api/v1/targets', { state: 'active' });
    return data.activeTargets.map((t) => ({ labels: t.labels, ...(prometheusDuration(t.scrapeInterval) ? { scrapeIntervalSeconds: prometheusDuration(t.scrapeInterval) as number } : {}) }));
  }

  /**
   * How long before now a VictoriaMetrics' range queries settle: the points of its last
   * -search.latencyOffset carry the value before them. 0 for anything that is not a VictoriaMetrics.
   */
  async latencySeconds(): Promise<number> {
    try {
      const healthy = await request(`${this.url}/-/healthy`, { method: 'GET', signal: AbortSignal.timeout(30_000) });
      if (!/victoria/i.test(await healthy.body.text())) return 0;
      const flags = await request(`${this.url}/flags`, { method: 'GET', signal: AbortSignal.timeout(30_000) });
      const offset = /^-search\.latencyOffset="?([^"\n]*)"?$/m.exec(await flags.body.text())?.[1];
      return prometheusDuration(offset) ?? VICTORIA_LATENCY_SECONDS;
    } catch {
      return 0;
    }
  }

  /** A Prometheus' version and retention; undefined when it cannot say (a VictoriaMetrics has no /api/v1/status/flags). */
  async status(): Promise<{ version: string; retentionSeconds: number } | undefined> {
    try {
      const flags = await this.get<Record<string, string>>('/api/v1/status/flags');
      const info = await this.get<{ version?: string }>('/api/v1/status/buildinfo');
      if (!info.version) return undefined;
      return { version: info.version, retentionSeconds: prometheusDuration(flags['storage.tsdb.retention.time']) || PROMETHEUS_RETENTION_SECONDS };
    } catch {
      return undefined;
    }
  }
}

/** VictoriaMetrics' -search.latencyOffset when not set. */
const VICTORIA_LATENCY_SECONDS = 30;

export interface ActiveTarget {
  readonly labels: Readonly<Record<string, string>>;
  /** The target's own scrape interval, seconds, where the server says it. */
  readonly scrapeIntervalSeconds?: number;
}

/** A PromQL string literal. */
export const promString = (text: string) => JSON.stringify(text);
