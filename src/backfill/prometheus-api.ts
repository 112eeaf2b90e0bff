/**
 * The few calls of the Prometheus HTTP API a backfill makes to the Prometheus it fills: range
 * queries (where this exporter's series are missing), the active targets (the instance label the
 * live target carries) and the configuration (the job's scrape interval).
 */
import { request } from 'undici';
import { parse } from 'yaml';
import { prometheusDuration } from './target-check.js';

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

  /** The labels of the active targets. */
  async targets(): Promise<Array<Readonly<Record<string, string>>>> {
    const data = await this.get<{ activeTargets: Array<{ labels: Record<string, string> }> }>('/api/v1/targets', { state: 'active' });
    return data.activeTargets.map((t) => t.labels);
  }

  /** The scrape interval of the job named `job` in the configuration (else the global one), seconds. */
  async scrapeInterval(job: string): Promise<number | undefined> {
    try {
      const data = await this.get<{ yaml: string }>('/api/v1/status/config');
      const config = parse(data.yaml) as { global?: { scrape_interval?: string }; scrape_configs?: Array<{ job_name?: string; scrape_interval?: string }> } | null;
      const own = config?.scrape_configs?.find((c) => c.job_name === job)?.scrape_interval;
      return prometheusDuration(own ?? config?.global?.scrape_interval) ?? 60;
    } catch {
      return undefined;
    }
  }
}

/** A PromQL string literal. */
export const promString = (text: string) => JSON.stringify(text);
