/**
 * The one way generators write their files: by default every file is written and named;
 * `--check` writes nothing and fails, naming each file that differs from what would be generated
 * (CI and tests use it, so a generated file can never drift from its source).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function readOrEmpty(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    // A missing file is drift like any other difference.
    return '';
  }
}

export interface WriteOptions {
  /** Compare instead of writing. */
  readonly check: boolean;
  /** Write into this folder (file names only) instead of the repository: a user's own copy. */
  readonly out?: string;
}

/** Writes or checks `files` (path relative to the repository → content); returns the exit code. */
export function writeOrCheck(files: Iterable<readonly [file: string, text: string]>, opts: WriteOptions, regenerate: string): number {
  const { check, out } = opts;
  let drift = 0;
  for (const [file, text] of files) {
    const path = out === undefined ? `${ROOT}${file}` : join(out, basename(file));
    if (check) {
      if (readOrEmpty(path) !== text) {
        console.error(`${file} is out of date: run ${regenerate}`);
        drift++;
      }
      continue;
    }
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
    console.log(`wrote ${out === undefined ? file : path}`);
  }
  return drift === 0 ? 0 : 1;
}

/** True when the module at `url` is the script node was started with (not imported by a test). */
export function isMain(url: string): boolean {
  return process.argv[1] !== undefined && url === pathToFileURL(process.argv[1]).href;
}
