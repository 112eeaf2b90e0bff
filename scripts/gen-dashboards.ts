/**
 * Writes the Grafana dashboards under grafana/dashboards from scripts/dashboards/.
 *
 *   npm run dashboards                       regenerate
 *   npx tsx scripts/gen-dashboards.ts --check  exit 1 if a file differs from what would be generated
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { renderDashboards } from './dashboards/index.js';

function readOrEmpty(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    // A missing file is drift like any other difference.
    return '';
  }
}

function main(argv: readonly string[]): number {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const check = argv.includes('--check');
  let drift = 0;
  for (const [file, text] of renderDashboards()) {
    const path = `${root}${file}`;
    if (check) {
      if (readOrEmpty(path) !== text) {
        console.error(`${file} is out of date: run npm run dashboards`);
        drift++;
      }
      continue;
    }
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
    console.log(`wrote ${file}`);
  }
  return drift === 0 ? 0 : 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = main(process.argv.slice(2));
}
