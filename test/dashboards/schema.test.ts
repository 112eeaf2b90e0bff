/**
 * The committed dashboards against Grafana's own published types (@grafana/schema, see
 * test/dashboards/schema.ts): no compiler error; and the check is real: copies with one mistake each
 * (an unknown enum value, a key the type lacks, a wrong type) each fail it, in the same compilation.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { REPO_DIR, schemaSource, typeErrors } from './schema.js';

type Obj = Record<string, unknown>;

const dir = `${REPO_DIR}grafana/dashboards/`;
const shipped = new Map(
  readdirSync(dir)
    .filter((n) => n.endsWith('.json'))
    .sort()
    .map((n) => [n, JSON.parse(readFileSync(dir + n, 'utf8')) as Obj] as const),
);

const copy = (): Obj => structuredClone(shipped.get('cmdb-exporter-health.json')) as Obj;
const panelsOf = (d: Obj) => d.panels as Obj[];
const firstOfType = (d: Obj, type: string) => panelsOf(d).find((p) => p.type === type)!;

/** One mistake each, by the name of the dashboard copy that holds it. */
const MISTAKES: ReadonlyArray<[name: string, mutate: (d: Obj) => void]> = [
  ['bad-draw-style', (d) => { ((firstOfType(d, 'timeseries').fieldConfig as Obj).defaults as { custom: Obj }).custom.drawStyle = 'curve'; }],
  ['bad-legend-key', (d) => { ((firstOfType(d, 'timeseries').options as Obj).legend as Obj).position = 'left'; }],
  ['bad-graph-tooltip', (d) => { d.graphTooltip = 'shared'; }],
  ['bad-variable-refresh', (d) => { ((d.templating as Obj).list as Obj[])[1]!.refresh = 'onLoad'; }],
  ['bad-table-footer', (d) => { (firstOfType(d, 'table').options as Obj).footer = { show: false }; }],
  ['bad-target-without-refid', (d) => { delete (firstOfType(d, 'timeseries').targets as Obj[])[0]!.refId; }],
  ['bad-state-timeline-value', (d) => { (firstOfType(d, 'state-timeline').options as Obj).showValue = 'sometimes'; }],
];

describe("the dashboards against Grafana's published types (@grafana/schema)", () => {
  it('type-check without an error, and each copy with a mistake fails', () => {
    const all = new Map<string, Obj>(shipped);
    for (const [name, mutate] of MISTAKES) {
      const d = copy();
      mutate(d);
      all.set(name, d);
    }
    const errors = typeErrors(schemaSource(all));
    expect(errors.filter((e) => !e.startsWith('bad-'))).toEqual([]);
    for (const [name] of MISTAKES) expect(errors.some((e) => e.startsWith(`${name}`)), `${name} is reported:\n${errors.join('\n')}`).toBe(true);
    // Every panel of every shipped dashboard was checked against a panel type (none unknown).
    expect(schemaSource(shipped)).not.toContain('has no types here');
  });
});
