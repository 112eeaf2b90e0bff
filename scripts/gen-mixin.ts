/**
 * Writes the monitoring mixin under mixin/ (mixin.libsonnet, config.libsonnet, lib.libsonnet,
 * alerts/, rules/, dashboards/, jsonnetfile.json, .lint) and grafana/dashboards/.lint, from the same
 * source as the rule files and the dashboards (scripts/jsonnet/mixin-files.ts).
 *
 *   npm run mixin              regenerate
 *   npm run mixin -- --check   exit 1 if a file differs from what would be generated
 */
import { parseArgs } from 'node:util';
import { isMain, writeOrCheck } from './generated.js';
import { renderMixinFiles } from './jsonnet/mixin-files.js';

if (isMain(import.meta.url)) {
  const { values } = parseArgs({ options: { check: { type: 'boolean', default: false } }, strict: true });
  process.exitCode = writeOrCheck(renderMixinFiles(), { check: values.check }, 'npm run mixin');
}
