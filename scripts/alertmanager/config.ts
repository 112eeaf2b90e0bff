/**
 * The shipped Alertmanager configuration (config/alertmanager/alertmanager.yml): one notification
 * per problem of a stack, critical and warning to different receivers, info to none, and the
 * inhibition rules that hold back a cause's effects. docs/alertmanager.md explains every choice.
 */
import type { MixinConfig } from '../mixin.js';
import { CONNECTOR_CAUSE, CONNECTOR_EFFECTS, STACK_CAUSES } from '../rules/problems.js';
import { acceptingAbsent, splitMatchers } from './matchers.js';

export const TEMPLATE_FILE = 'cmdb.tmpl';
export const RECEIVERS = { critical: 'cmdb-critical', warning: 'cmdb-warning', none: 'cmdb-none' } as const;
/** One notification per problem of a stack; a connector is a problem of its own (its own source system). */
export const GROUP_BY = ['stack', 'problem', 'connector'] as const;
export const TIMING = { group_wait: '30s', group_interval: '5m', repeat_interval: '4h' } as const;

const EXPORTER_ALERTS = 'CmdbExporterDown|CmdbExporterAbsent';
const causes = STACK_CAUSES.join('|');
/**
 * The license alerts: the exporter computes the days left at each scrape from the expiry date it
 * holds, so they stay true while the CMDB is down, and a cause of the stack holds them back no more
 * than the calendar waits for the CMDB.
 */
const LICENSE_ALERTS = 'CmdbLicense.+';

/** The matchers that select this mixin's alerts: every Cmdb* alert of the selected job and stacks. */
export function cmdbMatchers(mixin: MixinConfig): string[] {
  return ['alertname=~"Cmdb.+"', ...[...splitMatchers(mixin.jobSelector), ...splitMatchers(mixin.stackSelector)].map(acceptingAbsent)];
}

export function inhibitRules(): Record<string, unknown>[] {
  return [
    {
      // The exporter is down (no target of its address answers): what it serves is stale or gone.
      // Not its own /sd target failing alone (scope="target"): the stacks' targets still answer,
      // their alerts are sound (the rule's scope label, scripts/rules/alerts-exporter.ts).
      source_matchers: ['alertname="CmdbExporterDown"', 'stack=""', 'scope!="target"'],
      target_matchers: ['alertname=~"Cmdb.+"', `alertname!~"${EXPORTER_ALERTS}"`],
      equal: ['job', 'instance'],
    },
    {
      // One stack's own scrape target (/sd) fails: that stack's alerts.
      source_matchers: ['alertname="CmdbExporterDown"', 'stack!=""'],
      target_matchers: ['alertname=~"Cmdb.+"', `alertname!~"${EXPORTER_ALERTS}"`],
      equal: ['job', 'instance', 'stack'],
    },
    {
      // The CMDB unreachable, the credentials rejected or every request paused: the stack's endpoint,
      // staleness and data alerts are effects. The causes, the exporter's own alerts and the license
      // (true whatever the CMDB does) stay.
      source_matchers: [`alertname=~"${causes}"`],
      target_matchers: ['alertname=~"Cmdb.+"', `alertname!~"${causes}|${EXPORTER_ALERTS}|CmdbConfigReloadFailed|${LICENSE_ALERTS}"`],
      equal: ['job', 'instance', 'stack'],
    },
    {
      // A connector's failed run writes nothing and misses fields: one notification, the error's.
      source_matchers: [`alertname="${CONNECTOR_CAUSE}"`],
      target_matchers: [`alertname=~"${CONNECTOR_EFFECTS.join('|')}"`],
      equal: ['job', 'instance', 'stack', 'connector', 'profile'],
    },
  ];
}

const SECRETS = '/etc/alertmanager/secrets';

function slack(channel: string, secretFile: string): Record<string, unknown> {
  return {
    api_url_file: `${SECRETS}/${secretFile}`,
    channel,
    send_resolved: true,
    color: '{{ template "cmdb.slack.color" . }}',
    title: '{{ template "cmdb.slack.title" . }}',
    title_link: '{{ template "cmdb.dashboard" . }}',
    text: '{{ template "cmdb.slack.text" . }}',
  };
}

/** The Teams bridge (prometheus-msteams) renders cmdb.tmpl's "teams.card" and posts it to the workflow. */
function teams(path: string): Record<string, unknown> {
  return { url: `http://127.0.0.1:2000/${path}`, send_resolved: true };
}

export function receivers(): Record<string, unknown>[] {
  return [
    // Info alerts (a permission the token lacks, missing connector fields) stay on the status page and dashboards.
    { name: RECEIVERS.none },
    {
      name: RECEIVERS.critical,
      email_configs: [
        {
          to: 'cmdb-oncall@example.com',
          send_resolved: true,
          headers: { Subject: '{{ template "cmdb.email.subject" . }}' },
          html: '{{ template "cmdb.email.html" . }}',
          text: '{{ template "cmdb.email.text" . }}',
        },
      ],
      slack_configs: [slack('#cmdb-critical', 'slack-critical-webhook-url')],
      webhook_configs: [teams('cmdb-critical')],
    },
    {
      name: RECEIVERS.warning,
      slack_configs: [slack('#cmdb-alerts', 'slack-webhook-url')],
      webhook_configs: [teams('cmdb-warning')],
    },
  ];
}

export function alertmanagerConfig(mixin: MixinConfig): Record<string, unknown> {
  return {
    global: { smtp_smarthost: 'smtp.example.com:587', smtp_from: 'alertmanager@example.com', smtp_require_tls: true },
    templates: [TEMPLATE_FILE],
    route: {
      receiver: RECEIVERS.none,
      group_by: [...GROUP_BY],
      ...TIMING,
      routes: [
        {
          receiver: RECEIVERS.warning,
          matchers: cmdbMatchers(mixin),
          routes: [
            { receiver: RECEIVERS.critical, matchers: ['severity="critical"'], repeat_interval: '1h' },
            { receiver: RECEIVERS.none, matchers: ['severity="info"'] },
          ],
        },
      ],
    },
    inhibit_rules: inhibitRules(),
    receivers: receivers(),
  };
}

export interface TestTiming {
  readonly group_wait: string;
  readonly group_interval: string;
  readonly repeat_interval: string;
}

/**
 * A copy for a test or the demo: every receiver that sends somewhere posts the webhook payload to
 * `url`/<receiver name> instead (the none receiver stays silent, as shipped), and the routes'
 * timings are `timing`. The routing tree, the grouping and the inhibition rules are the shipped ones.
 */
export function withWebhookReceivers(config: Record<string, unknown>, url: string, timing: TestTiming): Record<string, unknown> {
  const route = config.route as Record<string, unknown>;
  const retime = (r: Record<string, unknown>): Record<string, unknown> => {
    const out: Record<string, unknown> = { ...r };
    for (const key of Object.keys(timing) as Array<keyof TestTiming>) if (key in r || r === route) out[key] = timing[key];
    if (Array.isArray(r.routes)) out.routes = (r.routes as Record<string, unknown>[]).map(retime);
    return out;
  };
  const receivers = (config.receivers as Array<{ name: string }>).map(({ name, ...integrations }) =>
    Object.keys(integrations).length === 0 ? { name } : { name, webhook_configs: [{ url: `${url.replace(/\/$/, '')}/${name}`, send_resolved: true }] },
  );
  const { global: _global, ...rest } = config;
  return { ...rest, route: retime(route), receivers };
}
