/**
 * Figures derived from the measurements: what grows per connector profile, and an estimate of the
 * steady-state CPU an hour at the default intervals.
 */
import { BUILTIN_SETTINGS } from '../src/config/rules.js';
import { DEFAULT_INTERVALS } from '../src/config/types.js';
import { GROUP_NAMES } from '../src/api/endpoints.js';
import { cellsOf, pooled } from './compare-run.js';
import type { SizeResult } from './results.js';

export const SCRAPE_INTERVAL_SECONDS = 15;
export const PROMETHEUS_REPLICAS = 2;

function slope(a: SizeResult, b: SizeResult, value: (s: SizeResult) => number): number {
  const profiles = b.data.connectorProfiles - a.data.connectorProfiles;
  return profiles > 0 ? ((value(b) - value(a)) / profiles) * 1000 : Number.NaN;
}

/**
 * Growth per 1,000 connector profiles, from the smallest to the largest size measured, and the
 * connector profiles at which the default maxSeries is reached (other endpoints' series included).
 */
export function growth(sizes: readonly SizeResult[]) {
  const sorted = [...sizes].sort((x, y) => x.data.connectorProfiles - y.data.connectorProfiles);
  const a = sorted[0];
  const b = sorted[sorted.length - 1];
  if (!a || !b || a === b) return undefined;
  const connectorSeries = b.first.seriesByEndpoint.connector ?? 0;
  const otherSeries = b.first.cmdbSeries - connectorSeries;
  const seriesPerProfile = connectorSeries / b.data.connectorProfiles;
  return {
    seriesPerProfile,
    bytesPerSeries: b.first.textBytes / b.first.exposedSeries,
    heapMiB: slope(a, b, (s) => s.first.memory.heapUsedBytes) / 2 ** 20,
    rssMiB: slope(a, b, (s) => s.first.memory.rssBytes) / 2 ** 20,
    repeatPollCpuMs: slope(a, b, (s) => s.repeat.cpuMs),
    changeCpuMs: slope(a, b, (s) => s.swap.data.cpuMs),
    profilesAtDefaultCap: Math.max(0, (BUILTIN_SETTINGS.maxSeries - otherSeries) / seriesPerProfile),
  };
}

/**
 * Every group's successful poll changes the exposition (its last-success time at least), and the
 * next scrape renders it again; groups start at spread-out offsets, so their changes do not coincide.
 */
const RERENDERS_PER_HOUR = GROUP_NAMES.reduce((n, g) => n + 3600 / DEFAULT_INTERVALS[g], 0);

/** The exporter's CPU per gzip request over every round of the comparison, socket writes included. */
export function gzipCpuPerRequest(s: SizeResult): number {
  return pooled(cellsOf(s.compare, 'exporter', 'gzip')).cpuPerRequest;
}

/**
 * An upper-bound estimate: the polls as 12 repeat polls of every group an hour plus the hourly
 * Action-jobs refresh; every change as costly as a data change of the largest endpoint (most polls
 * change status only, which costs far less: see the swap table); every scrape of PROMETHEUS_REPLICAS
 * servers at SCRAPE_INTERVAL_SECONDS with gzip (what Prometheus asks for), at the CPU per request
 * measured over HTTP, socket writes included. CPU seconds an hour; coreShare: of one core.
 */
export function steadyState(s: SizeResult) {
  const pollsPerHour = 3600 / DEFAULT_INTERVALS.connectors;
  const polls = (pollsPerHour * s.repeat.cpuMs + Math.max(0, s.hourLater.cpuMs - s.repeat.cpuMs)) / 1000;
  const scrapesPerHour = (3600 / SCRAPE_INTERVAL_SECONDS) * PROMETHEUS_REPLICAS;
  const renders = Math.min(RERENDERS_PER_HOUR, scrapesPerHour);
  const rerenders = (renders * s.swap.data.cpuMs) / 1000;
  const scrapes = (scrapesPerHour * gzipCpuPerRequest(s)) / 1000;
  const total = polls + rerenders + scrapes;
  return { polls, rerenders, scrapes, total, coreShare: total / 3600, rerendersPerHour: renders, scrapesPerHour };
}
