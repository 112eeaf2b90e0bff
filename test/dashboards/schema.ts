/**
 * Type-checks dashboard JSON against Grafana's own published dashboard types (@grafana/schema: the
 * Dashboard, VariableModel, Panel and RowPanel of the dashboard schema, and each panel plugin's
 * Options and FieldConfig), the way a TypeScript author of the dashboard would be checked: the JSON
 * is written as object literals that must `satisfies` those types, so a wrong type, an unknown
 * enum value or a key the type does not have (at any depth TypeScript checks excess properties) is a
 * compiler error. @grafana/schema ships no JSON schema, and the Prometheus query model lives in
 * Grafana's Prometheus plugin: a target is checked as the schema's DataQuery (refId, hide, …) with
 * the query's own fields left open, and so are override properties (`value: any` in the schema).
 */
import ts from 'typescript';

export const REPO_DIR = new URL('../../', import.meta.url).pathname;

/** Panel types the dashboards use → the panel plugin's types module (undefined: no plugin config). */
export const PANEL_TYPES: Readonly<Record<string, string | undefined>> = {
  timeseries: 'timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen',
  stat: 'stat/panelcfg/x/StatPanelCfg_types.gen',
  table: 'table/panelcfg/x/TablePanelCfg_types.gen',
  'state-timeline': 'statetimeline/panelcfg/x/StateTimelinePanelCfg_types.gen',
};

const PRELUDE = `
import type { DataQuery, Dashboard, FieldConfig, FieldConfigSource, Panel, RowPanel } from '@grafana/schema';
${Object.entries(PANEL_TYPES)
  .map(([type, mod], i) => `import type * as p${i} from '@grafana/schema/dist/esm/raw/composable/${mod}'; // ${type}`)
  .join('\n')}

/** JSON has no TypeScript enums: a string enum becomes the union of its values. */
type Lit<T> = T extends string ? \`\${T}\` : T extends number | boolean | null | undefined ? T : T extends ReadonlyArray<infer U> ? Array<Lit<U>> : T extends object ? { [K in keyof T]: Lit<T[K]> } : T;
type Defaults<C> = Omit<FieldConfig, 'custom'> & { custom?: C };
type PanelOf<O, C> = Lit<Omit<Panel, 'options' | 'fieldConfig' | 'targets'> & {
  options: O;
  fieldConfig: Omit<FieldConfigSource, 'defaults'> & { defaults: Defaults<C> };
  targets: Array<DataQuery & Record<string, unknown>>;
}>;
type DashboardOnly = Lit<Omit<Dashboard, 'panels'>> & { panels: unknown[] };
// The project's own rule asks a description of every row too (Grafana's row has none and ignores it).
type RowOnly = Lit<Omit<RowPanel, 'panels'>> & { panels: unknown[]; description: string };
${Object.keys(PANEL_TYPES)
  .map((type, i) => `type Panel_${i} = PanelOf<p${i}.Options, ${type === 'stat' ? 'never' : `p${i}.FieldConfig`}>; // ${type}`)
  .join('\n')}
`;

type Obj = Record<string, unknown>;

/** The TypeScript source that checks `dashboards` (name → JSON), one constant per dashboard and panel. */
export function schemaSource(dashboards: ReadonlyMap<string, Obj>): string {
  const types = Object.keys(PANEL_TYPES);
  const lines: string[] = [PRELUDE];
  let n = 0;
  const json = (v: unknown) => JSON.stringify(v, null, 2);
  const panelCheck = (where: string, p: Obj): void => {
    const index = types.indexOf(String(p.type));
    if (p.type === 'row') {
      const { panels = [], ...rest } = p;
      lines.push(`// ${where}\nexport const c${n++} = ${json({ ...rest, panels: [] })} satisfies RowOnly;`);
      for (const child of panels as Obj[]) panelCheck(`${where} > ${String(child.title)}`, child);
    } else if (index < 0) {
      lines.push(`// ${where}: panel type ${String(p.type)} has no types here\nexport const c${n++}: never = ${json(p.type)};`);
    } else {
      lines.push(`// ${where}\nexport const c${n++} = ${json(p)} satisfies Panel_${index};`);
    }
  };
  for (const [name, d] of dashboards) {
    const { panels = [], ...rest } = d;
    lines.push(`// ${name}\nexport const c${n++} = ${json({ ...rest, panels: [] })} satisfies DashboardOnly;`);
    for (const p of panels as Obj[]) panelCheck(`${name} > ${String(p.title)}`, p);
  }
  return lines.join('\n');
}

/** Compiler errors of `source` (as if it were a file in test/dashboards/), with the line they point at. */
export function typeErrors(source: string): string[] {
  const file = `${REPO_DIR}test/dashboards/__grafana_schema_check__.ts`;
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    skipLibCheck: true,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.readFile = (f) => (f === file ? source : readFile(f));
  host.fileExists = (f) => f === file || ts.sys.fileExists(f);
  host.getSourceFile = (f, lang, ...rest) => (f === file ? ts.createSourceFile(f, source, lang, true) : getSourceFile(f, lang, ...rest));
  const program = ts.createProgram([file], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    if (!d.file || d.start === undefined) return text;
    const { line } = d.file.getLineAndCharacterOfPosition(d.start);
    const lines = d.file.text.split('\n');
    // The nearest comment above names the dashboard and panel.
    const where = lines.slice(0, line + 1).reverse().find((l) => l.startsWith('// ')) ?? '';
    return `${where.slice(3)}: line ${line + 1} (${(lines[line] ?? '').trim()}): ${text}`;
  });
}
