import { readFileSync } from 'node:fs';

// package.json is one directory above both src/ (tsx, tests) and dist/ (built daemon).
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

export const VERSION: string = pkg.version;
export const DEFAULT_USER_AGENT = `cmdb-exporter/${VERSION}`;
