/**
 * What the chart refuses, with Helm 4 and Helm 3: values.schema.json refuses unknown keys and wrong
 * types (the exporter's configuration included, from its own zod schema), and the templates' `fail`
 * refuses what a schema cannot say (templates/_validation.tpl). Each refusal must name the key.
 * And what it must not refuse: every spelling the exporter itself accepts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanHelmHome, HELM_MAJORS, template } from './helm.js';

afterAll(cleanHelmHome);

const STACK = { name: 'prod', baseUrl: 'https://cmdb.example.com', clientId: 'x', secretFile: '/etc/cmdb-exporter/secrets/cmdb_secret' };
const HASH = '$2b$10$YWSKXjmH784W.eqVDyxZHuie9duYxcX0yWXsu./cFUuAYo4aLzFI2';
const CREATED = { existingSecret: '', create: true, data: { cmdb_secret: 'x' } };

describe.each(HELM_MAJORS)('Helm %i', (major) => {
  it('refuses a values file with an unknown top-level key, naming it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cmdb-helm-values-'));
    try {
      const file = join(dir, 'values.yaml');
      writeFileSync(file, 'replica: 2\n');
      const r = await template(major, { files: [file] });
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/[Aa]dditional propert(y|ies) '?replica'? (is )?not allowed/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    ['a misspelt key of a stack', { config: { stacks: [{ ...STACK, secretFiel: '/x' }] } }, 'secretFiel'],
    ['a mapping where the exporter takes a duration', { config: { defaults: { timeoutSeconds: { s: 1 } } } }, 'timeoutSeconds'],
    ['a stack without its name', { config: { stacks: [{ baseUrl: 'https://x.example.com', tokenFile: '/x' }] } }, 'name'],
    ['listenAddress, which the chart sets', { config: { listenAddress: ':8080', stacks: [STACK] } }, 'listenAddress'],
    ['an unknown scrape mode', { scrape: { via: 'Probe' } }, 'via'],
    ['a misspelt chart key', { persistence: { enable: true } }, 'enable'],
  ])('refuses %s (values.schema.json)', async (_what, values, name) => {
    const r = await template(major, { values });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("values don't meet the specifications of the schema");
    expect(r.stderr).toContain(name);
  });

  it('takes every spelling the exporter takes: durations as text, switches as text, a list as comma-separated text', async () => {
    const r = await template(major, {
      values: {
        config: {
          enableReload: 'true',
          defaults: { timeoutSeconds: '1m', maxResponseBytes: '64MiB', intervals: { inventory: '10m', license: 7200 }, tls: { insecureSkipVerify: 0 }, track: { assets: 'web-01, db-01' } },
          stacks: [{ ...STACK, rateLimitPerMinute: '40', retries: { minDelaySeconds: 0.25 } }],
        },
      },
    });
    expect(r.code, r.stderr).toBe(0);
  });

  it.each([
    ['replicas without sharding', { replicas: 2 }, 'replicas: 2 without sharding.enabled'],
    ['storage with more than one replica of a Deployment', { replicas: 3, persistence: { enabled: true } }, 'persistence.enabled with replicas: 3 of a Deployment'],
    ['a shard count of its own', { sharding: { enabled: true }, replicas: 3, extraArgs: ['--total-shards=4'] }, 'extraArgs: --total-shards'],
    ['a shard variable of its own', { sharding: { enabled: true }, replicas: 3, extraEnv: [{ name: 'EXPORTER_TOTAL_SHARDS', value: '4' }] }, 'extraEnv: EXPORTER_TOTAL_SHARDS'],
    ['a flag the chart sets', { extraArgs: ['--config', '/x.yaml'] }, 'extraArgs: --config is set by the chart'],
    ['a claim of its own for a StatefulSet', { sharding: { enabled: true }, replicas: 2, persistence: { enabled: true, existingClaim: 'mine' } }, 'persistence.existingClaim with sharding.enabled'],
    ['a grace period shorter than the shutdown deadline', { terminationGracePeriodSeconds: 5 }, 'terminationGracePeriodSeconds: 5 is shorter than the exporter\'s shutdown deadline of 10 s'],
    ['no stack', { config: { stacks: [] } }, '\n- config.stacks: your CMDBs'],
    ['no image', { image: { repository: '' } }, '\n- image.repository: the image you built'],
    ['an existing Secret and a created one', { secrets: { existingSecret: 'mine', create: true, data: { a: 'b' } } }, 'never both'],
    ['secrets in the values without create', { secrets: { data: { cmdb_secret: 'x' } } }, 'secrets.data holds secrets in the values'],
    ['an inline secret in a stack without create', { config: { stacks: [{ ...STACK, secretFile: undefined, secret: 'hunter2' }] } }, 'config.stacks[0].secret: an inline secret'],
    ['an inline token in a stack without create', { config: { stacks: [{ name: 'a', baseUrl: 'https://a.example.com', token: 'abc' }] } }, 'config.stacks[0].token: an inline secret'],
    ['a created Secret without anything in it', { secrets: { existingSecret: '', create: true } }, 'secrets.create: nothing to put in the Secret'],
    ['a secret file without a Secret', { secrets: { existingSecret: '' } }, 'config.stacks[0].secretFile reads /etc/cmdb-exporter/secrets/cmdb_secret from the Secret\'s mount, but no Secret is mounted'],
    ['a secret file the created Secret lacks', { secrets: { ...CREATED, data: { other: 'x' } } }, 'reads key cmdb_secret, which the Secret the chart creates lacks'],
    ['a password instead of a bcrypt hash', { webConfig: { config: { basic_auth_users: { prometheus: 'hunter2' } } }, scrape: { basicAuth: { username: { name: 's', key: 'u' } } } }, 'basic_auth_users.prometheus: not a bcrypt hash'],
    ['an inline TLS key', { webConfig: { config: { tls_server_config: { cert_file: '/x', key: 'PEM' } } } }, 'tls_server_config.key: a private key inline'],
    ['a web config twice', { webConfig: { config: { http_server_config: {} }, existingSecret: 'web' } }, 'webConfig.config and webConfig.existingSecret'],
    ['basic auth that Prometheus would not pass', { webConfig: { config: { basic_auth_users: { prometheus: HASH } } } }, 'scrape.basicAuth is empty: the ServiceMonitor would get 401'],
    ['a ScrapeConfig without per-stack targets', { scrape: { via: 'ScrapeConfig' } }, 'set scrape.perStack: true'],
    ['per-stack targets from a PodMonitor', { scrape: { via: 'PodMonitor', perStack: true } }, 'scrape.perStack with via: PodMonitor'],
    ['per-stack ServiceMonitor endpoints over shards', { scrape: { perStack: true }, sharding: { enabled: true }, replicas: 2 }, 'scrape.perStack with via: ServiceMonitor and sharding.enabled'],
    ['per-stack ServiceMonitor endpoints without the stacks', { scrape: { perStack: true }, config: { stacks: [], stacksDir: '/etc/stacks.d' } }, 'needs the stacks in config.stacks'],
    ['an alert that is not shipped', { prometheusRule: { disabledAlerts: ['CmdbNoSuchAlert'] } }, 'prometheusRule.disabledAlerts: CmdbNoSuchAlert is not a shipped alert'],
    ['receivers the routes do not find', { alertmanagerConfig: { enabled: true, receivers: [{ name: 'cmdb-none' }, { name: 'cmdb-warning' }] } }, 'alertmanagerConfig.receivers lacks cmdb-critical'],
  ])('fails on %s, naming the key', async (_what, values, message) => {
    const r = await template(major, { values });
    expect(r.code, r.stdout.slice(0, 300)).not.toBe(0);
    expect(r.stderr).toContain('execution error');
    expect(r.stderr).toContain(message);
  });

  it('names only what is missing: with the image given, the stacks and the Secret', async () => {
    const r = await template(major, { files: [], values: { image: { repository: 'registry.example.com/cmdb-exporter' } } });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('the chart has no default for these');
    expect(r.stderr).toContain('\n- config.stacks: ');
    expect(r.stderr).toContain('\n- secrets.existingSecret: ');
    expect(r.stderr).not.toContain('image.repository');
  });

  it.each([
    ['a stack key in another case', { config: { stacks: [{ ...STACK, baseUrl: undefined, baseURL: STACK.baseUrl }] } }, 'baseURL', 'baseUrl'],
    ['a stack key in snake case', { config: { stacks: [{ ...STACK, secretFile: undefined, secret_file: STACK.secretFile }] } }, 'secret_file', 'secretFile'],
    ['a chart key in lower case', { secrets: { existingsecret: 'mine' } }, 'existingsecret', 'existingSecret'],
    ['a setting under defaults', { config: { defaults: { TLS: { insecureSkipVerify: true } } } }, 'TLS', 'tls'],
  ])('refuses %s, naming the key it means (values.schema.json)', async (_what, values, typo, meant) => {
    const r = await template(major, { values });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("values don't meet the specifications of the schema");
    expect(r.stderr).toContain(typo);
    // Helm 4: invalid propertyName 'baseURL' … value must be 'baseUrl'; Helm 3: … does not match: "baseUrl".
    expect(r.stderr).toMatch(major === 4 ? new RegExp(`invalid propertyName '${typo}'[\\s\\S]*value must be '${meant}'`) : new RegExp(`Property name of "${typo}" does not match[\\s\\S]*does not match: "${meant}"`));
  });

  it('renders what those refusals guard, set right', async () => {
    for (const values of [
      { replicas: 3, sharding: { enabled: true }, persistence: { enabled: true } },
      { terminationGracePeriodSeconds: 10 },
      { secrets: CREATED },
      { config: { stacks: [{ ...STACK, secretFile: undefined, secret: '${CMDB_SECRET}' }] }, secrets: { existingSecret: '' } },
      { webConfig: { config: { basic_auth_users: { prometheus: HASH } } }, scrape: { basicAuth: { username: { name: 's', key: 'u' }, password: { name: 's', key: 'p' } } } },
      { scrape: { via: 'ScrapeConfig', perStack: true }, sharding: { enabled: true }, replicas: 2 },
      { config: { stacks: [], stacksDir: '/etc/stacks.d' }, scrape: { via: 'none', perStack: true } },
    ]) {
      const r = await template(major, { values });
      expect(r.code, `${JSON.stringify(values)}: ${r.stderr}`).toBe(0);
    }
  });
});
