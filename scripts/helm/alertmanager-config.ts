/**
 * The shipped Alertmanager routing (scripts/alertmanager/config.ts, config/alertmanager/alertmanager.yml)
 * as the spec of a prometheus-operator AlertmanagerConfig (monitoring.coreos.com/v1alpha1), for the
 * Helm chart: the same route tree, grouping, timings, inhibition rules and receivers, in the CRD's
 * spelling (camelCase keys, matchers as {name, matchType, value}, email headers as a list, the
 * global SMTP settings on each email receiver, a Slack webhook URL as a Secret key instead of a file).
 *
 * Read from the generator, never copied: a change of the routing or the inhibitions there reaches
 * the chart with `npm run generate`, and the drift check fails until it does.
 */
import { basename } from 'node:path';
import { alertmanagerConfig } from '../alertmanager/config.js';
import type { MixinConfig } from '../mixin.js';

type Tree = Record<string, unknown>;

export interface CrdMatcher {
  readonly name: string;
  readonly matchType: '=' | '!=' | '=~' | '!~';
  readonly value: string;
}

const MATCHER = /^\s*([A-Za-z_]\w*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*$/;

/** `alertname=~"Cmdb.+"` → { name: alertname, matchType: =~, value: Cmdb.+ } (the value unquoted). */
export function crdMatcher(text: string): CrdMatcher {
  const m = MATCHER.exec(text);
  if (!m) throw new Error(`not an Alertmanager matcher: ${JSON.stringify(text)}`);
  return { name: m[1] as string, matchType: m[2] as CrdMatcher['matchType'], value: JSON.parse(`"${m[3] as string}"`) as string };
}

const ROUTE_KEYS: Record<string, string> = {
  receiver: 'receiver',
  group_by: 'groupBy',
  group_wait: 'groupWait',
  group_interval: 'groupInterval',
  repeat_interval: 'repeatInterval',
  continue: 'continue',
};

function route(r: Tree): Tree {
  const out: Tree = {};
  for (const [key, value] of Object.entries(r)) {
    if (key === 'matchers') out.matchers = (value as string[]).map(crdMatcher);
    else if (key === 'routes') out.routes = (value as Tree[]).map(route);
    else if (ROUTE_KEYS[key]) out[ROUTE_KEYS[key]] = value;
    else throw new Error(`route key ${key} has no AlertmanagerConfig spelling here: add it to ROUTE_KEYS`);
  }
  return out;
}

function inhibitRule(r: Tree): Tree {
  return {
    sourceMatch: (r.source_matchers as string[]).map(crdMatcher),
    targetMatch: (r.target_matchers as string[]).map(crdMatcher),
    equal: r.equal,
  };
}

const camel = (key: string) => key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/** One integration's settings in the CRD's spelling (send_resolved → sendResolved, title_link → titleLink). */
function integration(settings: Tree, secret: string): Tree {
  const out: Tree = {};
  for (const [key, value] of Object.entries(settings)) {
    if (key === 'api_url_file') out.apiURL = { name: secret, key: basename(String(value)) };
    else if (key === 'headers') out.headers = Object.entries(value as Record<string, string>).map(([k, v]) => ({ key: k, value: v }));
    else out[camel(key)] = value;
  }
  return out;
}

const RECEIVER_KEYS: Record<string, string> = { email_configs: 'emailConfigs', slack_configs: 'slackConfigs', webhook_configs: 'webhookConfigs' };

function receiver(r: Tree, global: Tree, secret: string): Tree {
  const out: Tree = { name: r.name };
  for (const [key, value] of Object.entries(r)) {
    if (key === 'name') continue;
    const crdKey = RECEIVER_KEYS[key];
    if (crdKey === undefined) throw new Error(`receiver key ${key} has no AlertmanagerConfig spelling here: add it to RECEIVER_KEYS`);
    out[crdKey] = (value as Tree[]).map((settings) => {
      const converted = integration(settings, secret);
      // An AlertmanagerConfig has no global section: the SMTP settings go on each email receiver.
      if (key !== 'email_configs') return converted;
      return { smarthost: global.smtp_smarthost, from: global.smtp_from, requireTLS: global.smtp_require_tls, ...converted };
    });
  }
  return out;
}

/** Keys of an integration whose value is one of cmdb.tmpl's templates, per CRD integration list. */
export const TEMPLATED_KEYS: Readonly<Record<string, readonly string[]>> = {
  emailConfigs: ['headers', 'html', 'text'],
  slackConfigs: ['color', 'title', 'titleLink', 'text'],
};

/**
 * The AlertmanagerConfig spec of the shipped routing for `mixin`; Slack webhook URLs are read from
 * the Secret `slackSecret` (one key per webhook, named as the shipped configuration's files).
 */
export function alertmanagerConfigSpec(mixin: MixinConfig, slackSecret: string): Tree {
  const config = alertmanagerConfig(mixin);
  const global = (config.global ?? {}) as Tree;
  for (const key of Object.keys(config)) {
    if (!['global', 'templates', 'route', 'inhibit_rules', 'receivers'].includes(key)) throw new Error(`top-level key ${key} has no AlertmanagerConfig spelling here`);
  }
  return {
    route: route(config.route as Tree),
    inhibitRules: (config.inhibit_rules as Tree[]).map(inhibitRule),
    receivers: (config.receivers as Tree[]).map((r) => receiver(r, global, slackSecret)),
  };
}
