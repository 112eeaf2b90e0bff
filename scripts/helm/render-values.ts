/**
 * The chart's values tree (values.ts) written three ways: values.schema.json, values.yaml with the
 * descriptions as comments, and the values reference table of docs/kubernetes.md.
 */
import { stringify } from 'yaml';
import type { JsonSchema } from './config-schema.js';
import type { ValueNode } from './values.js';

const WIDTH = 100;

function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  return line === '' ? lines : [...lines, line];
}

/** values.schema.json: every mapping closed, `config` from the exporter's own schema. */
export function valuesSchema(nodes: Readonly<Record<string, ValueNode>>, config: JsonSchema): JsonSchema {
  const node = (n: ValueNode, path: string): JsonSchema => {
    if (path === 'config') return { ...config, description: n.description, default: n.default };
    if (n.keys) return { type: 'object', description: n.description, properties: props(n.keys, `${path}.`), additionalProperties: false };
    if (!n.schema) throw new Error(`${path}: neither a schema nor keys`);
    return { ...n.schema, description: n.description, default: n.default };
  };
  const props = (keys: Readonly<Record<string, ValueNode>>, prefix: string) =>
    Object.fromEntries(Object.entries(keys).map(([k, n]) => [k, node(n, `${prefix}${k}`)]));
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    title: 'Values of the cmdb-exporter chart',
    type: 'object',
    // Helm passes `global` to every chart; an umbrella chart may set it.
    properties: { ...props(nodes, ''), global: { type: 'object', description: 'Values shared with subcharts (unused here).' } },
    additionalProperties: false,
  };
}

/** The defaults of the tree as a plain object. */
export function defaultsOf(nodes: Readonly<Record<string, ValueNode>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(nodes).map(([k, n]) => [k, n.keys ? defaultsOf(n.keys) : n.default]));
}

function yamlValue(key: string, value: unknown, indent: string): string[] {
  const empty = value === null || typeof value !== 'object' || Object.keys(value as object).length === 0;
  if (empty) return [`${indent}${key}: ${stringify(value, { flowCollectionPadding: false }).trimEnd()}`];
  const body = stringify(value, { lineWidth: 0 }).trimEnd().split('\n');
  return [`${indent}${key}:`, ...body.map((l) => `${indent}  ${l}`)];
}

/** values.yaml: each key's description as a comment above it. */
export function valuesYaml(nodes: Readonly<Record<string, ValueNode>>, header: string): string {
  const lines: string[] = header.split('\n').map((l) => (l === '' ? '#' : `# ${l}`));
  const walk = (keys: Readonly<Record<string, ValueNode>>, indent: string) => {
    Object.entries(keys).forEach(([key, n], i) => {
      // A blank line between keys, none between a mapping and its first key.
      if (i > 0 || indent === '') lines.push('');
      lines.push(...wrap(n.description, WIDTH - indent.length - 2).map((l) => `${indent}# ${l}`));
      if (n.keys) {
        lines.push(`${indent}${key}:`);
        walk(n.keys, `${indent}  `);
      } else lines.push(...yamlValue(key, n.default, indent));
    });
  };
  walk(nodes, '');
  return `${lines.join('\n')}\n`;
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const code = (value: unknown) => (value === undefined ? '—' : `\`${cell(JSON.stringify(value))}\``);
function typeOf(schema: JsonSchema): string {
  const t = schema.type;
  const text = Array.isArray(t) ? t.join(' or ') : String(t ?? 'any');
  return schema.enum ? `${text}: ${(schema.enum as unknown[]).map((v) => `\`${String(v)}\``).join(', ')}` : text;
}

/** The reference table of the chart's own keys (the configuration's keys have a table of their own). */
export function chartReference(nodes: Readonly<Record<string, ValueNode>>): string {
  const rows = ['| key | type | default | what |', '|---|---|---|---|'];
  const walk = (keys: Readonly<Record<string, ValueNode>>, prefix: string) => {
    for (const [key, n] of Object.entries(keys)) {
      const path = `${prefix}${key}`;
      if (n.keys) {
        rows.push(`| \`${path}\` | mapping | | ${cell(n.description)} |`);
        walk(n.keys, `${path}.`);
      } else if (path === 'config') rows.push(`| \`config\` | mapping | \`logFormat: json\`, no stack | ${cell(n.description)} The keys: [below](#the-config-keys). |`);
      else rows.push(`| \`${path}\` | ${typeOf(n.schema ?? {})} | ${code(n.default)} | ${cell(n.description)} |`);
    }
  };
  walk(nodes, '');
  return rows.join('\n');
}

/** The table of the configuration's keys under `config`, per-stack settings once for defaults and stacks. */
export function configReference(config: JsonSchema): string {
  const rows = ['| key | type | default |', '|---|---|---|'];
  /** Leaf rows of `schema`: each name its paths get (one, or defaults.X and stacks[].X together). */
  const walk = (schema: JsonSchema, names: (path: string) => string, prefix = '', skip: readonly string[] = []) => {
    for (const [key, s] of Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>)) {
      if (skip.includes(key)) continue;
      if (s.properties) walk(s, names, `${prefix}${key}.`);
      else rows.push(`| ${names(prefix + key)} | ${typeOf(s)} | ${code(s.default)} |`);
    }
  };
  const props = config.properties as Record<string, JsonSchema>;
  const defaults = props.defaults ?? {};
  const stack = (props.stacks?.items ?? {}) as JsonSchema;
  const settings = Object.keys((defaults.properties ?? {}) as object);
  const required = (stack.required ?? []) as string[];
  walk(config, (path) => `\`${path}\``, '', ['defaults', 'stacks']);
  // A stack's own keys (identity, credentials), then the settings a stack shares with defaults.
  for (const [key, s] of Object.entries((stack.properties ?? {}) as Record<string, JsonSchema>)) {
    if (!settings.includes(key)) rows.push(`| \`stacks[].${key}\` | ${typeOf(s)} | ${required.includes(key) ? 'required' : '—'} |`);
  }
  walk(defaults, (path) => `\`defaults.${path}\`, \`stacks[].${path}\``);
  return rows.join('\n');
}
