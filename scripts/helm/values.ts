/**
 * The Helm chart's values, once: each key's description, JSON Schema and default. scripts/gen-chart.ts
 * writes values.yaml (the defaults, with the descriptions as comments), values.schema.json (these
 * schemas, with the exporter's configuration schema at `config`) and the values reference of
 * docs/kubernetes.md from this tree, so the three never disagree.
 *
 * Every mapping is closed (additionalProperties: false): a misspelt key is refused when Helm
 * renders, not ignored. Objects passed through to Kubernetes (resources, affinity, …) are open;
 * the rendered objects are validated against the Kubernetes schemas in the chart's tests.
 */
import { DEFAULT_PORT } from '../../src/config/rules.js';
import type { JsonSchema } from './config-schema.js';

export interface ValueNode {
  /** Plain sentences; the first one is the summary in the reference. */
  readonly description: string;
  /** A leaf: its schema (without default and description) and its default. */
  readonly schema?: JsonSchema;
  readonly default?: unknown;
  /** A mapping of named keys. */
  readonly keys?: Readonly<Record<string, ValueNode>>;
}

const leaf = (schema: JsonSchema, fallback: unknown, description: string): ValueNode => ({ schema, default: fallback, description });
const group = (description: string, keys: Record<string, ValueNode>): ValueNode => ({ description, keys });
const str = (fallback: string, description: string, extra: JsonSchema = {}) => leaf({ type: 'string', ...extra }, fallback, description);
const bool = (fallback: boolean, description: string) => leaf({ type: 'boolean' }, fallback, description);
const int = (fallback: number, description: string, extra: JsonSchema = {}) => leaf({ type: 'integer', ...extra }, fallback, description);
const obj = (fallback: Record<string, unknown>, description: string) => leaf({ type: 'object' }, fallback, description);
const list = (fallback: unknown[], description: string, items: JsonSchema = {}) => leaf({ type: 'array', items }, fallback, description);
const labels = (description: string) => leaf({ type: 'object', additionalProperties: { type: 'string' } }, {}, description);

/** Prometheus durations, as the operator's CRDs spell them. */
const DURATION = { type: 'string', pattern: '^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$' };
/** A label value that is safe inside the regex matchers of the routing, as well as in PromQL. */
const JOB = { type: 'string', pattern: '^[A-Za-z0-9_][A-Za-z0-9_:-]*$' };

export const STATE_DIR = '/var/lib/cmdb-exporter';

/**
 * No stack by default: the CMDBs, the image and the Secret are what only the user knows, and the
 * chart refuses to render without them (templates/_validation.tpl) instead of deploying an example.
 */
export const DEFAULT_CONFIG = {
  logFormat: 'json',
  stacks: [],
};

export const CHART_VALUES: Readonly<Record<string, ValueNode>> = {
  nameOverride: str('', 'Replaces the chart name in the names of the objects.'),
  fullnameOverride: str('', 'The full name of the objects (default: the release name, followed by -cmdb-exporter unless it contains it).'),
  image: group('The exporter image. None is published: build the repository\'s Dockerfile and push it to your registry.', {
    repository: str('', 'Required: the image you built from the repository\'s Dockerfile and pushed, e.g. registry.example.com/cmdb-exporter.'),
    tag: str('', "Image tag (default: the chart's appVersion)."),
    digest: str('', 'Image digest (sha256:…); when set it is used instead of the tag.', { pattern: '^(sha256:[a-f0-9]{64})?$' }),
    pullPolicy: str('IfNotPresent', 'Image pull policy.', { enum: ['Always', 'IfNotPresent', 'Never'] }),
  }),
  imagePullSecrets: list([], 'Secrets to pull the image with ([{name: …}]).', { type: 'object' }),
  replicas: int(1, 'Pods. More than one only with sharding.enabled: two unsharded replicas would poll every CMDB twice against its 60 requests a minute.', { minimum: 1, maximum: 1000 }),
  sharding: group('Split the stacks over `replicas` pods (docs/scaling.md).', {
    enabled: bool(false, 'A StatefulSet whose pods take their shard from their ordinal (--shard-from-pod-name) and the shard count from `replicas` (EXPORTER_TOTAL_SHARDS), with a claim per pod when persistence.enabled.'),
  }),
  config: {
    description:
      'The exporter\'s configuration file (docs/configuration.md), rendered into a ConfigMap. Every key but listenAddress and storagePath, which the chart sets. Required: config.stacks, your CMDBs, each with its name, baseUrl and credentials, e.g. [{name: prod, baseUrl: https://cmdb.example.com, clientId: cmdb-exporter, secretFile: /etc/cmdb-exporter/secrets/cmdb_secret}]. Secrets do not belong here: read them with secretFile/tokenFile from the Secret (secrets.*) mounted at /etc/cmdb-exporter/secrets, or write ${VAR} with extraEnv.',
    default: DEFAULT_CONFIG,
  },
  secrets: group('The Secret mounted read-only at /etc/cmdb-exporter/secrets, one file per key: an existing Secret, or one the chart creates, never both.', {
    existingSecret: str('', 'A Secret you create (kubectl create secret generic …), one key per secretFile/tokenFile of the stacks: keeps the CMDB secrets out of Helm. Required when a stack reads a file under /etc/cmdb-exporter/secrets, unless create.'),
    create: bool(false, 'Create the Secret from `data` (and from the stacks\' inline secret/token, which then move there): the values then hold secrets that `helm get values` shows.'),
    data: leaf({ type: 'object', additionalProperties: { type: 'string' } }, {}, 'Key → secret text, with create: true only; refused otherwise.'),
  }),
  webConfig: group('TLS and basic authentication of the exporter\'s own server (--web.config.file, exporter-toolkit format; docs/security.md). Off while both config and existingSecret are empty.', {
    config: obj({}, 'The web-config.yml as values (tls_server_config, http_server_config, basic_auth_users), written to a Secret. basic_auth_users take bcrypt hashes; a plaintext password or an inline TLS key is refused.'),
    existingSecret: str('', 'Or a Secret of yours with the key web-config.yml; then say what it turns on with tls and basicAuth.'),
    tls: bool(false, 'With existingSecret: the file turns TLS on.'),
    basicAuth: bool(false, 'With existingSecret: the file asks for a password.'),
    tlsSecret: str('', 'A kubernetes.io/tls Secret (tls.crt, tls.key; e.g. from cert-manager) mounted at /etc/cmdb-exporter/tls. With `config` and no tls_server_config, the chart points tls_server_config at it.'),
  }),
  persistence: group('Where the exporter keeps what it knew across restarts (--storage.path, docs/restarts.md). Off: an emptyDir, which survives a container restart but not a new pod.', {
    enabled: bool(false, 'A ReadWriteOnce claim: one for the Deployment (strategy Recreate), one per pod of the sharded StatefulSet (volumeClaimTemplates).'),
    storageClassName: str('', 'Storage class of the claim (default: the cluster\'s default class).'),
    size: str('1Gi', 'Size of each claim.'),
    existingClaim: str('', 'Use this claim instead of creating one (Deployment only).'),
    annotations: labels('Annotations of the claims.'),
  }),
  service: group('The Service in front of the pods.', {
    type: str('ClusterIP', 'Service type.', { enum: ['ClusterIP', 'NodePort', 'LoadBalancer'] }),
    port: int(DEFAULT_PORT, 'Service port (the container listens on 9873).', { minimum: 1, maximum: 65535 }),
    annotations: labels('Annotations of the Service.'),
  }),
  scrape: group('How a prometheus-operator Prometheus scrapes the exporter.', {
    via: str('ServiceMonitor', 'ServiceMonitor (one target per pod), PodMonitor (the same without the Service), ScrapeConfig (one target per stack from /sd; needs perStack) or none.', {
      enum: ['ServiceMonitor', 'PodMonitor', 'ScrapeConfig', 'none'],
    }),
    perStack: bool(false, 'One target per stack (docs/scaling.md): /metrics?stack=NAME for each stack, plus the exporter\'s own. Sets --web.external-url for /sd. With via ServiceMonitor: one endpoint per stack of config.stacks.'),
    job: str('cmdb-exporter', 'The job label of every series: the PrometheusRule, the AlertmanagerConfig and the dashboards select it.', JOB),
    labels: labels('Labels of the ServiceMonitor/PodMonitor/ScrapeConfig, e.g. release: kube-prometheus-stack for its default selector.'),
    interval: str('30s', 'Scrape interval. A scrape never reaches the CMDB: any interval is fine.', DURATION),
    scrapeTimeout: str('10s', 'Scrape timeout.', DURATION),
    sdRefreshInterval: str('1m', 'How often Prometheus reads /sd (perStack with ScrapeConfig).', DURATION),
    tlsConfig: obj({}, 'The operator\'s SafeTLSConfig for the scrape (and /sd) when webConfig turns TLS on, e.g. {ca: {secret: {name, key}}, serverName: …} or {insecureSkipVerify: true}.'),
    basicAuth: obj({}, 'The operator\'s BasicAuth ({username: {name, key}, password: {name, key}}, Secret keys) when webConfig asks for a password.'),
    relabelings: list([], 'Extra relabelings of the targets (after the chart\'s, which set job).', { type: 'object' }),
    metricRelabelings: list([], 'Metric relabelings.', { type: 'object' }),
  }),
  prometheusRule: group('The shipped recording and alerting rules (config/prometheus), as a PrometheusRule.', {
    enabled: bool(true, 'Render the PrometheusRule.'),
    labels: labels('Labels of the PrometheusRule, e.g. release: kube-prometheus-stack for its default ruleSelector.'),
    namespaceScoped: bool(true, 'The rules select namespace="<release namespace>" besides the job, and every alert carries that namespace label (which the AlertmanagerConfig\'s namespace matcher needs, and which absent() and max by () would drop). Off: the shipped rules as they are, for every namespace.'),
    alertLabels: labels('Labels added to every alert, e.g. team: cmdb.'),
    disabledAlerts: list([], 'Alerts left out, by name (e.g. CmdbQueryCountRose).', { type: 'string', pattern: '^Cmdb[A-Za-z]+$' }),
  }),
  alertmanagerConfig: group('The shipped Alertmanager routing (config/alertmanager) as an AlertmanagerConfig: one notification per problem of a stack, critical and warning to different receivers, the inhibition rules.', {
    enabled: bool(false, 'Render the AlertmanagerConfig (monitoring.coreos.com/v1alpha1).'),
    labels: labels('Labels of the AlertmanagerConfig, for the Alertmanager\'s alertmanagerConfigSelector.'),
    slackSecret: str('cmdb-alertmanager', 'The Secret with the Slack webhook URLs of the shipped receivers (keys slack-critical-webhook-url and slack-webhook-url).'),
    grafanaUrl: str('http://localhost:3000', "Grafana's root URL, for the dashboard links of the notifications (with templates).", { pattern: '^https?://[^\\s?#]+$' }),
    templates: bool(false, 'Use cmdb.tmpl in the notifications (subject, Slack title and text, e-mail body). Only once that Alertmanager loads the templates ConfigMap the chart renders (docs/kubernetes.md): a notification naming a template Alertmanager lacks fails.'),
    receivers: list([], 'Receivers replacing the shipped examples (example.com addresses): the CRD\'s receiver objects, named cmdb-none, cmdb-critical and cmdb-warning as the routes expect.', { type: 'object' }),
  }),
  grafanaDashboards: group('The three Grafana dashboards as ConfigMaps for the Grafana sidecar.', {
    enabled: bool(true, 'Render the dashboard ConfigMaps.'),
    labels: leaf({ type: 'object', additionalProperties: { type: 'string' } }, { grafana_dashboard: '1' }, 'Labels the sidecar looks for.'),
    annotations: leaf({ type: 'object', additionalProperties: { type: 'string' } }, { grafana_folder: 'CMDB' }, 'Annotations of the ConfigMaps (the sidecar\'s folder annotation).'),
  }),
  networkPolicy: group('A NetworkPolicy for the pods.', {
    enabled: bool(false, 'Render the NetworkPolicy: ingress to the exporter\'s port only, from ingressFrom.'),
    ingressFrom: list([], 'NetworkPolicyPeers allowed to reach the port (Prometheus); empty: any source.', { type: 'object' }),
    egress: list([], 'Egress rules; when given, all other egress is denied: allow DNS and the CMDBs (HTTPS) here.', { type: 'object' }),
  }),
  resources: obj({ requests: { cpu: '50m', memory: '192Mi' }, limits: { memory: '384Mi' } }, 'Container resources, sized from the benchmark (docs/kubernetes.md, Sizing). No CPU limit: throttled polls only deliver later.'),
  podSecurityContext: obj(
    { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000, seccompProfile: { type: 'RuntimeDefault' } },
    'Pod security context: the image\'s non-root node user (uid 1000); fsGroup lets it write the state volume and read the Secret (mode 0440).',
  ),
  securityContext: obj({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } }, 'Container security context.'),
  terminationGracePeriodSeconds: int(15, 'Seconds Kubernetes waits after SIGTERM. The exporter needs up to 10: in-flight polls get 5 s, then the state is written.', { minimum: 0 }),
  livenessProbe: obj({}, 'Replaces the liveness probe (default: GET /healthz; a TCP check when basic auth is on).'),
  readinessProbe: obj({}, 'Replaces the readiness probe (default: GET /readyz, ready once every endpoint was polled once; a TCP check when basic auth is on).'),
  podAnnotations: labels('Annotations of the pods.'),
  podLabels: labels('Labels of the pods.'),
  nodeSelector: labels('Node selector.'),
  tolerations: list([], 'Tolerations.', { type: 'object' }),
  affinity: obj({}, 'Affinity.'),
  priorityClassName: str('', 'Priority class of the pods.'),
  extraArgs: list([], 'More command-line flags (cmdb-exporter --help), e.g. --web.max-requests=20. Not the ones the chart sets.', { type: 'string' }),
  extraEnv: list([], 'More environment variables (EnvVar objects), e.g. a secretKeyRef for a ${VAR} in config.', { type: 'object' }),
  extraVolumes: list([], 'More volumes of the pod (e.g. a stacksDir from a ConfigMap).', { type: 'object' }),
  extraVolumeMounts: list([], 'More volume mounts of the container.', { type: 'object' }),
  extraManifests: list([], 'More objects to render with the release: objects, or strings rendered with tpl.', { type: ['object', 'string'] }),
};
