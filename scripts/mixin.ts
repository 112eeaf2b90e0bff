/**
 * The mixin settings shared by the rule and dashboard generators: which scrape job and which stacks
 * the rules and dashboards select, and where the runbooks live. Defaults below; override them with
 * flags or a small YAML file:
 *
 *   npm run rules -- --job-selector 'job="cmdb"' --stack-selector 'stack=~"prod-.*"' \
 *     --runbook-url https://wiki.example.com/cmdb-alerts --out /tmp/rules
 *   npm run dashboards -- --config mixin.yaml --out /tmp/dashboards
 *   npm run alertmanager -- --grafana-url https://grafana.example.com --out /tmp/alertmanager
 *
 * mixin.yaml keys: jobSelector, stackSelector, runbookBaseUrl, grafanaUrl (any subset). Flags win over the file.
 * Without --out the files are written where the repository keeps them (and the drift tests compare
 * against the defaults, so keep custom output out of the repository). The jsonnet mixin (mixin/,
 * `npm run mixin`, scripts/jsonnet/) carries these settings and every threshold in its _config.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parse } from 'yaml';
import { writeOrCheck } from './generated.js';

export interface MixinConfig {
  /** One label matcher selecting the exporter's scrape job, e.g. job="cmdb-exporter". */
  readonly jobSelector: string;
  /** Optional matcher(s) limiting the stacks, e.g. stack=~"prod-.*"; empty: every stack. */
  readonly stackSelector: string;
  /** Base of every runbook_url; the alert's anchor (#cmdbexporterdown) is appended. */
  readonly runbookBaseUrl: string;
  /** Grafana's root URL, for the dashboard links of the Alertmanager notifications. */
  readonly grafanaUrl: string;
}

/** The repository's own address, from package.json `repository` (one place to change it). */
export function repositoryUrl(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { repository?: { url?: string } };
  const url = pkg.repository?.url;
  if (!url) throw new Error('package.json has no repository.url');
  return url.replace(/^git\+/, '').replace(/\.git$/, '');
}

export const MIXIN_DEFAULTS: MixinConfig = {
  jobSelector: 'job="cmdb-exporter"',
  stackSelector: '',
  runbookBaseUrl: `${repositoryUrl()}/blob/main/docs/alerts.md`,
  // Where docker compose serves Grafana.
  grafanaUrl: 'http://localhost:3000',
};

const MATCHER = /^\s*[A-Za-z_]\w*\s*(=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"\s*$/;

/** Problems of a mixin configuration, each naming the key. */
export function mixinProblems(c: MixinConfig): string[] {
  const problems: string[] = [];
  if (!MATCHER.test(c.jobSelector)) problems.push(`jobSelector: must be one label matcher such as job="cmdb-exporter", got ${JSON.stringify(c.jobSelector)}`);
  if (c.stackSelector !== '' && !c.stackSelector.split(/,(?=\s*[A-Za-z_]\w*\s*(?:=~|!~|!=|=))/).every((m) => MATCHER.test(m))) {
    problems.push(`stackSelector: must be empty or label matchers such as stack=~"prod-.*", got ${JSON.stringify(c.stackSelector)}`);
  }
  if (!/^https?:\/\/\S+$/.test(c.runbookBaseUrl)) problems.push(`runbookBaseUrl: must be an http(s) URL, got ${JSON.stringify(c.runbookBaseUrl)}`);
  if (!/^https?:\/\/[^\s?#]+$/.test(c.grafanaUrl)) problems.push(`grafanaUrl: must be an http(s) URL without query or fragment, got ${JSON.stringify(c.grafanaUrl)}`);
  return problems;
}

export interface GeneratorArgs {
  readonly mixin: MixinConfig;
  readonly check: boolean;
  /** Directory to write into instead of the repository's own places. */
  readonly out?: string;
}

/** The generators' command line; throws with a message naming the flag or key. */
export function parseGeneratorArgs(argv: readonly string[]): GeneratorArgs {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      check: { type: 'boolean', default: false },
      config: { type: 'string' },
      out: { type: 'string' },
      'job-selector': { type: 'string' },
      'stack-selector': { type: 'string' },
      'runbook-url': { type: 'string' },
      'grafana-url': { type: 'string' },
    },
    strict: true,
    allowPositionals: false,
  });
  let file: Partial<MixinConfig> = {};
  if (values.config !== undefined) {
    const raw: unknown = parse(readFileSync(values.config, 'utf8'));
    if (raw !== null && (typeof raw !== 'object' || Array.isArray(raw))) throw new Error(`${values.config}: must be a YAML mapping`);
    const allowed = new Set(Object.keys(MIXIN_DEFAULTS));
    for (const [k, v] of Object.entries((raw ?? {}) as Record<string, unknown>)) {
      if (!allowed.has(k)) throw new Error(`${values.config}: unknown key ${k} (keys: ${[...allowed].join(', ')})`);
      if (typeof v !== 'string') throw new Error(`${values.config}: ${k} must be a string`);
    }
    file = (raw ?? {}) as Partial<MixinConfig>;
  }
  const mixin: MixinConfig = {
    jobSelector: values['job-selector'] ?? file.jobSelector ?? MIXIN_DEFAULTS.jobSelector,
    stackSelector: values['stack-selector'] ?? file.stackSelector ?? MIXIN_DEFAULTS.stackSelector,
    runbookBaseUrl: values['runbook-url'] ?? file.runbookBaseUrl ?? MIXIN_DEFAULTS.runbookBaseUrl,
    grafanaUrl: (values['grafana-url'] ?? file.grafanaUrl ?? MIXIN_DEFAULTS.grafanaUrl).replace(/\/+$/, ''),
  };
  const problems = mixinProblems(mixin);
  if (problems.length > 0) throw new Error(problems.join('\n'));
  if (values.check && values.out !== undefined) throw new Error('--check compares the repository\'s files with the defaults; it cannot be combined with --out');
  return { mixin, check: values.check, ...(values.out !== undefined ? { out: values.out } : {}) };
}

/**
 * The main() of a generator that takes the mixin settings: parse its flags (exit 2 naming a bad one),
 * then write or check the files rendered with them.
 */
export function runMixinGenerator(
  name: string,
  argv: readonly string[],
  render: (mixin: MixinConfig) => Iterable<readonly [string, string]>,
  regenerate: string,
): number {
  let args: GeneratorArgs;
  try {
    args = parseGeneratorArgs(argv);
  } catch (err) {
    console.error(`${name}: ${(err as Error).message}`);
    return 2;
  }
  return writeOrCheck(render(args.mixin), args, regenerate);
}
