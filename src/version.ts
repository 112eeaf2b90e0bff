import { readFileSync } from 'node:fs';

// package.json is one directory above both src/ (tsx, tests) and dist/ (built daemon).
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
  repository?: { url?: string };
};

export const VERSION: string = pkg.version;
/** The project's repository (package.json `repository.url`), for links to what is not packaged. */
export const REPOSITORY_URL: string = (pkg.repository?.url ?? '').replace(/^git\+/, '').replace(/\.git$/, '');
export const DEFAULT_USER_AGENT = `cmdb-exporter/${VERSION}`;
