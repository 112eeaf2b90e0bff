/**
 * Just enough of the Dockerfile and .dockerignore formats to check the packaging without a container
 * engine: instructions (with line continuations), COPY sources, exec-form commands, ENV, and
 * whether a path of the build context is excluded by .dockerignore.
 */

export interface Instruction {
  readonly keyword: string;
  /** Everything after the keyword, continuation lines joined. */
  readonly args: string;
  readonly line: number;
}

export function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let pending = '';
  let startLine = 0;
  text.split('\n').forEach((raw, i) => {
    const line = raw.trimEnd();
    if (pending === '' && (line.trim() === '' || line.trimStart().startsWith('#'))) return;
    if (pending !== '' && line.trimStart().startsWith('#')) return; // comments inside a continuation
    if (pending === '') startLine = i + 1;
    const continued = line.endsWith('\\');
    pending += `${continued ? line.slice(0, -1) : line} `;
    if (continued) return;
    const keyword = pending.trim().split(/\s+/)[0] ?? '';
    out.push({ keyword: keyword.toUpperCase(), args: pending.trim().slice(keyword.length).trim(), line: startLine });
    pending = '';
  });
  return out;
}

/** `["node", "dist/main.js"]` → the array; undefined for the shell form. */
export function execForm(args: string): string[] | undefined {
  if (!args.startsWith('[')) return undefined;
  const parsed = JSON.parse(args) as unknown;
  return Array.isArray(parsed) && parsed.every((a) => typeof a === 'string') ? parsed : undefined;
}

function splitFlags(args: string): { flags: string[]; words: string[] } {
  const flags: string[] = [];
  let rest = args;
  for (let m = /^(--\S+)\s+/.exec(rest); m; m = /^(--\S+)\s+/.exec(rest)) {
    flags.push(m[1] ?? '');
    rest = rest.slice(m[0].length);
  }
  return { flags, words: execForm(rest) ?? rest.split(/\s+/).filter(Boolean) };
}

/** Sources of COPY/ADD instructions that read the build context (not `--from=` another stage). */
export function contextSources(instructions: readonly Instruction[]): Array<{ source: string; line: number }> {
  return instructions
    .filter((i) => i.keyword === 'COPY' || i.keyword === 'ADD')
    .flatMap((i) => {
      const { flags, words } = splitFlags(i.args);
      if (flags.some((f) => f.startsWith('--from='))) return [];
      return words.slice(0, -1).map((source) => ({ source, line: i.line }));
    });
}

/** `HEALTHCHECK [--opt=…] CMD [...]` → the command array. */
export function healthcheckCommand(instructions: readonly Instruction[]): string[] | undefined {
  const hc = instructions.find((i) => i.keyword === 'HEALTHCHECK');
  const m = hc ? /\bCMD\s+(\[.*\])\s*$/.exec(hc.args) : null;
  return m ? execForm(m[1] ?? '') : undefined;
}

/** `ENV A=1 B=2` of the final stage (the runtime image), as a map. */
export function finalStageEnv(instructions: readonly Instruction[]): Record<string, string> {
  const lastFrom = instructions.map((i) => i.keyword).lastIndexOf('FROM');
  const env: Record<string, string> = {};
  for (const i of instructions.slice(lastFrom).filter((x) => x.keyword === 'ENV')) {
    for (const m of i.args.matchAll(/(\w+)=("[^"]*"|\S*)/g)) env[m[1] ?? ''] = (m[2] ?? '').replace(/^"|"$/g, '');
  }
  return env;
}

function patternToRegExp(pattern: string): RegExp {
  let re = '';
  const p = pattern.replace(/^\/+/, '').replace(/\/+$/, '');
  for (let i = 0; i < p.length; i++) {
    const c = p[i] ?? '';
    if (c === '*' && p[i + 1] === '*') {
      re += '.*';
      i++;
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/**
 * True when .dockerignore keeps `path` (relative to the context) out of the build context: the path
 * or one of its parent directories matches a pattern, the last matching line (with `!`) deciding.
 */
export function isIgnored(dockerignore: string, path: string): boolean {
  const rules = dockerignore
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => ({ exclude: !l.startsWith('!'), re: patternToRegExp(l.replace(/^!/, '')) }));
  const parts = path.replace(/^\.\//, '').split('/');
  const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
  let ignored = false;
  for (const rule of rules) {
    if (prefixes.some((p) => rule.re.test(p))) ignored = rule.exclude;
  }
  return ignored;
}
