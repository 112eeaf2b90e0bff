import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { issuesOf, Scratch } from './helpers.js';

let scratch: Scratch;
beforeEach(() => {
  scratch = new Scratch();
  mkdirSync(join(scratch.dir, 'stacks.d'));
});
afterEach(() => scratch.remove());

const MAIN = `stacksDir: stacks.d
defaults:
  rateLimitPerMinute: 20
  intervals: { inventory: 10m }
stacks:
  - { name: main, baseUrl: "https://main.example.com", token: tok-main-1234 }
`;
const load = (main = MAIN, env: Record<string, string> = {}) => loadConfig({ configFile: scratch.file('exporter.yaml', main), env });

describe('stacksDir', () => {
  it('adds the stacks of every file, one stack or a list per file, merged with the main file\'s defaults', () => {
    scratch.file('stacks.d/acme.yaml', 'name: acme\nbaseUrl: https://acme.example.com\ntokenFile: acme.token\nintervals: { license: 2h }\n');
    scratch.file('stacks.d/acme.token', 'tok-acme-1234\n');
    scratch.file('stacks.d/more.yml', 'stacks:\n  - { name: b1, baseUrl: "https://b1.example.com", token: tok-b1-1234 }\n  - { name: b2, baseUrl: "https://b2.example.com", token: tok-b2-1234 }\n');
    scratch.file('stacks.d/.acme2.yaml.tmp', 'not: read');
    scratch.file('stacks.d/README.txt', 'not read either');
    const config = load();
    expect(config.stacks.map((s) => s.name)).toEqual(['main', 'acme', 'b1', 'b2']);
    const acme = config.stacks[1];
    expect(acme?.rateLimitPerMinute).toBe(20);
    expect(acme?.intervals.inventory).toBe(600);
    expect(acme?.intervals.license).toBe(7200);
    // A relative file name is relative to the stack file's own directory.
    expect(acme?.auth).toEqual({ kind: 'token', token: 'tok-acme-1234', tokenFile: join(scratch.dir, 'stacks.d', 'acme.token') });
  });

  it('validates each file like the main file, with the file name in every message', () => {
    const bad = scratch.file('stacks.d/bad.yaml', 'name: bad\nbaseUrl: ftp://x\ntoken: tok-bad-1234\nrateLimitPerMinit: 5\n');
    const list = scratch.file('stacks.d/list.yaml', 'stacks:\n  - { name: "no spaces allowed", baseUrl: "https://x.example.com" }\nextra: 1\n');
    const broken = scratch.file('stacks.d/broken.yaml', 'name: [unclosed\n');
    const issues = issuesOf(() => load());
    expect(issues).toContainEqual({ path: `${bad}: baseUrl`, message: expect.stringContaining('http(s) URL') as unknown });
    expect(issues).toContainEqual({ path: `${bad}: rateLimitPerMinit`, message: expect.stringContaining('did you mean "rateLimitPerMinute"') as unknown });
    expect(issues).toContainEqual({ path: `${list}: stacks[0].name`, message: expect.stringContaining('must start with a letter') as unknown });
    expect(issues).toContainEqual({ path: `${list}: extra`, message: expect.stringContaining('unknown key in a stack file') as unknown });
    expect(issues).toContainEqual({ path: broken, message: expect.stringContaining('invalid YAML at line') as unknown });
    for (const i of issues) expect(i.path.startsWith(join(scratch.dir, 'stacks.d'))).toBe(true);
  });

  it('a stack name used in two files, or in a file and the main file, is an error naming both', () => {
    scratch.file('stacks.d/a.yaml', 'name: twin\nbaseUrl: https://a.example.com\ntoken: tok-a-1234\n');
    const b = scratch.file('stacks.d/b.yaml', 'name: twin\nbaseUrl: https://b.example.com\ntoken: tok-b-1234\n');
    const c = scratch.file('stacks.d/c.yaml', 'name: main\nbaseUrl: https://c.example.com\ntoken: tok-c-1234\n');
    const issues = issuesOf(() => load());
    expect(issues).toContainEqual({ path: `${b}: name`, message: `duplicate stack name "twin", also used by ${join(scratch.dir, 'stacks.d', 'a.yaml')}` });
    expect(issues).toContainEqual({ path: `${c}: name`, message: 'duplicate stack name "main", also used by stacks[0] of the config file' });
  });

  it('an empty directory and no stacks in the main file is valid: the fleet starts empty', () => {
    expect(load('stacksDir: stacks.d\n').stacks).toEqual([]);
  });

  it('a missing directory is an error at the key; EXPORTER_STACKS_DIR names itself', () => {
    rmSync(join(scratch.dir, 'stacks.d'), { recursive: true });
    expect(issuesOf(() => load())).toContainEqual({ path: 'stacksDir', message: expect.stringContaining('ENOENT') as unknown });
    expect(issuesOf(() => load('{}\n', { EXPORTER_STACKS_DIR: join(scratch.dir, 'nope') }))).toContainEqual({
      path: 'EXPORTER_STACKS_DIR',
      message: expect.stringContaining('cannot read the directory') as unknown,
    });
  });

  it('an empty file, or an empty list, says to delete the file instead', () => {
    const empty = scratch.file('stacks.d/empty.yaml', '');
    const none = scratch.file('stacks.d/none.yaml', 'stacks: []\n');
    const issues = issuesOf(() => load());
    expect(issues).toContainEqual({ path: empty, message: expect.stringContaining('delete the file') as unknown });
    expect(issues).toContainEqual({ path: `${none}: stacks`, message: expect.stringContaining('delete the file') as unknown });
  });

  it('no secret of a stack file reaches a message', () => {
    const f = scratch.file('stacks.d/s.yaml', 'name: s\nbaseUrl: https://s.example.com\nclientId: c\nsecret: hunter2-very-secret\nuserAgent: "hunter2-very-secret\\n"\n');
    const issues = issuesOf(() => load());
    expect(issues.some((i) => i.path.startsWith(f))).toBe(true);
    expect(JSON.stringify(issues)).not.toContain('hunter2-very-secret');
  });
});
