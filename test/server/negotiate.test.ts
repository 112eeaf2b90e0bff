/**
 * The format of /metrics by the Accept header's q-values, never by string match: what Prometheus
 * 2.42 and 3.x send, curl, browsers, wildcards, q=0 exclusions, and `escaping=` echoed.
 */
import { describe, expect, it } from 'vitest';
import { negotiate } from '../../src/server/negotiate.js';

const TEXT = 'text/plain; version=0.0.4; charset=utf-8';
const TEXT1 = 'text/plain; version=1.0.0; charset=utf-8';
const OM = 'application/openmetrics-text; version=1.0.0; charset=utf-8';
const OM001 = 'application/openmetrics-text; version=0.0.1; charset=utf-8';

describe('negotiate', () => {
  it.each([
    ['no Accept', undefined, TEXT],
    ['an empty Accept', '', TEXT],
    ['curl', '*/*', TEXT],
    ['a browser', 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8', TEXT],
    ['Prometheus 2.42 by default', 'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1', OM],
    [
      'Prometheus 2.42 with native histograms: no protobuf here, OpenMetrics next',
      'application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1',
      OM,
    ],
    [
      'Prometheus 3.5.3 with PrometheusProto first (as it sends it): OpenMetrics next, escaping echoed',
      'application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.6,application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1',
      `${OM}; escaping=allow-utf-8`,
    ],
    [
      'Prometheus 3 (escaping echoed)',
      'application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1',
      `${OM}; escaping=allow-utf-8`,
    ],
    ['text 1.0.0 with underscores', 'text/plain;version=1.0.0;escaping=underscores', `${TEXT1}; escaping=underscores`],
    ['an unknown escaping is not echoed', 'text/plain;version=1.0.0;escaping=bogus', TEXT1],
    ['text/plain without a version', 'text/plain', TEXT],
    ['OpenMetrics without a version', 'application/openmetrics-text', OM],
    ['OpenMetrics 0.0.1 only', 'application/openmetrics-text; version=0.0.1', OM001],
    ['the q-values, not the order', 'text/plain;version=0.0.4;q=0.3, application/openmetrics-text;version=1.0.0;q=0.9', OM],
    ['on a tie, the more specific range', 'text/plain, application/openmetrics-text;version=1.0.0', OM],
    ['q=0 excludes text; */* then picks the next', 'text/plain;q=0, */*', OM],
    ['OpenMetrics refused, protobuf lower than text', 'application/openmetrics-text;q=0,text/plain;q=0.5,application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.4', TEXT],
    ['protobuf alone: nothing acceptable, text', 'application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited', TEXT],
    ['an unknown text version', 'text/plain;version=9.9.9', TEXT],
    ['nothing acceptable falls back to text', 'application/json', TEXT],
    ['application/* picks OpenMetrics', 'application/*', OM],
    ['case and spaces', ' Application/OpenMetrics-Text ; Version=1.0.0 ', OM],
    ['a bad q counts as 0', 'application/openmetrics-text;q=abc, text/plain;version=0.0.4;q=0.1', TEXT],
  ])('%s → %s', (_what, accept, contentType) => {
    expect(negotiate(accept).contentType).toBe(contentType);
  });
});
