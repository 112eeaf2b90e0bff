import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ConfigError, type ConfigIssue } from '../../src/errors.js';
import { loadConfig, type LoadConfigOptions } from '../../src/config/load.js';
import type { ExporterConfig } from '../../src/config/types.js';

/** A scratch directory for config files and secret files; remove() deletes it. */
export class Scratch {
  readonly dir = mkdtempSync(join(tmpdir(), 'cmdb-config-test-'));

  /** Write `content` to `name` (relative to the scratch dir) and return the absolute path. */
  file(name: string, content: string): string {
    const path = join(this.dir, name);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, content);
    return path;
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The ConfigError thrown by `fn`; fails the test when nothing, or something else, is thrown. */
export function configErrorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw new Error(`expected a ConfigError, got ${String(err)}`);
  }
  throw new Error('expected a ConfigError, but loading succeeded');
}

export function issuesOf(fn: () => unknown): readonly ConfigIssue[] {
  return configErrorOf(fn).issues;
}

/** Load YAML text written to a scratch file. */
export function loadYaml(
  scratch: Scratch,
  yaml: string,
  env: Record<string, string | undefined> = {},
  rest: Partial<LoadConfigOptions> = {},
): ExporterConfig {
  const configFile = scratch.file('exporter.yaml', yaml);
  return loadConfig({ configFile, env, ...rest });
}

/** A minimal valid stack in YAML flow style, with extra keys spliced in. */
export function stackYaml(extra = '', name = 'prod'): string {
  return `{ name: ${name}, baseUrl: "https://cmdb.example.com", token: tok-${name}-1234${extra ? `, ${extra}` : ''} }`;
}
