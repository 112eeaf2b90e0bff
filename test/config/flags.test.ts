/**
 * One table of flags for the daemon and `backfill`: each command's parser and its --help come from
 * it, so a shared flag is parsed and described the same way by both, and an alias is one flag.
 */
import { describe, expect, it } from 'vitest';
import { FLAGS, FlagError, FlagValueError, checkFlags, flagsHelp, parseFlags, type Command, type FlagSpec } from '../../src/config/flags.js';
import { ConfigError } from '../../src/errors.js';
import { GLOBALS } from '../../src/config/rules.js';
import { DEFAULT_MAX_REQUESTS } from '../../src/server/limits.js';

const TABLE = Object.entries(FLAGS) as Array<[string, FlagSpec]>;
const COMMANDS: Command[] = ['daemon', 'backfill'];

/** The lines of a command's help that describe `--name` (its first line and the indented rest). */
function helpOf(command: Command, name: string): string {
  const lines = flagsHelp(command).split('\n');
  const start = lines.findIndex((l) => new RegExp(`^ {2}(-\\w, )?--${name.replace(/\./g, '\\.')}( |$)`).test(l));
  if (start < 0) return '';
  const rest = lines.slice(start + 1).findIndex((l) => !/^ {10,}\S/.test(l));
  return lines.slice(start, rest < 0 ? undefined : start + 1 + rest).join('\n');
}

describe('the flag table', () => {
  it.each(COMMANDS)('%s: the parser takes every flag the table gives it, and the help describes each (aliases in their flag)', (command) => {
    for (const [name, spec] of TABLE) {
      const argv = spec.type === 'boolean' ? [`--${name}`] : [`--${name}`, 'x'];
      if (!spec.commands.includes(command)) {
        expect(() => parseFlags(command, argv), name).toThrow(FlagError);
        expect(() => parseFlags(command, argv), name).toThrow(`Unknown option '--${name}'`);
        continue;
      }
      const values = parseFlags(command, argv) as Record<string, unknown>;
      expect(values[spec.aliasOf ?? name], name).toEqual(spec.type === 'boolean' ? true : spec.multiple ? ['x'] : 'x');
      if (spec.aliasOf === undefined) expect(helpOf(command, name), name).not.toBe('');
      else expect(helpOf(command, spec.aliasOf), name).toContain(`--${name}`);
    }
  });

  it.each(COMMANDS)('%s: a shared flag is described in the same words as in the other command (unless the table says otherwise)', (command) => {
    const other = COMMANDS.find((c) => c !== command) as Command;
    const shared = TABLE.filter(([, s]) => s.commands.includes(command) && s.commands.includes(other) && s.help !== undefined && s.helpFor === undefined);
    expect(shared.map(([n]) => n)).toEqual(expect.arrayContaining(['config', 'log.format', 'help']));
    for (const [name] of shared) expect(helpOf(command, name), name).toBe(helpOf(other, name));
  });

  it('fills defaults, turns absent switches off and leaves absent values unset', () => {
    expect(parseFlags('backfill', [])).toMatchObject({ job: 'cmdb-exporter', 'dry-run': false, help: false });
    expect(parseFlags('backfill', []).config).toBeUndefined();
    expect(parseFlags('daemon', ['-h', '-v'])).toMatchObject({ help: true, version: true, once: false });
  });

  it.each(COMMANDS)('%s: an alias is its flag; given both, a value flag is refused with the message both commands print', (command) => {
    expect(parseFlags(command, ['--config.file', 'a.yaml']).config).toBe('a.yaml');
    expect(() => parseFlags(command, ['--config', 'a.yaml', '--config.file', 'b.yaml'])).toThrow('--config and --config.file are the same option; give one of them');
    expect(Object.keys(parseFlags(command, []))).not.toContain('config.file');
  });

  it('a switch and its alias: on when either is given', () => {
    expect(parseFlags('daemon', ['--config.check'])['check-config']).toBe(true);
    expect(parseFlags('daemon', ['--check-config', '--config.check'])['check-config']).toBe(true);
    expect(parseFlags('daemon', [])['check-config']).toBe(false);
  });

  it('a repeatable flag gives its values in order, and none when it is not given', () => {
    const values = parseFlags('backfill', ['--remote-write.header', 'X-Scope-OrgID: a', '--remote-write.header', 'X-Other: b']);
    expect(values['remote-write.header']).toEqual(['X-Scope-OrgID: a', 'X-Other: b']);
    expect(parseFlags('backfill', [])['remote-write.header']).toEqual([]);
  });

  it('refuses positionals and missing values as a usage error', () => {
    expect(() => parseFlags('daemon', ['extra'])).toThrow(FlagError);
    expect(() => parseFlags('backfill', ['--from'])).toThrow(FlagError);
  });

  it('every setting that names a flag as its source names a flag of the daemon', () => {
    const named = Object.values(GLOBALS).flatMap((k) => ('flag' in k && k.flag !== undefined ? [k.flag] : []));
    expect(named.length).toBeGreaterThan(2);
    for (const flag of named) expect(FLAGS[flag.slice(2) as keyof typeof FLAGS]?.commands, flag).toContain('daemon');
  });

  it('the help says the built-in scrape limit', () => {
    expect(helpOf('daemon', 'web.max-requests')).toContain(`default ${DEFAULT_MAX_REQUESTS},`);
  });

  it('every entry is well formed: an alias points at a flag of the same commands and type, a value flag has a placeholder', () => {
    for (const [name, spec] of TABLE) {
      expect(/^[a-z][a-z.-]*$/.test(name), name).toBe(true);
      expect(spec.commands.length, name).toBeGreaterThan(0);
      if (spec.aliasOf !== undefined) {
        const target = (FLAGS as Readonly<Record<string, FlagSpec>>)[spec.aliasOf];
        expect(target?.type, name).toBe(spec.type);
        expect([...(target?.commands ?? [])].sort(), name).toEqual([...spec.commands].sort());
        expect(spec.help, name).toBeUndefined();
      } else expect(spec.help, name).toBeDefined();
      if (spec.type === 'string' && spec.aliasOf === undefined) expect(spec.value, name).toMatch(/^<\w+>$/);
    }
  });

  it('wraps the help within 100 columns, each text starting in one column', () => {
    for (const command of COMMANDS) {
      for (const line of flagsHelp(command).trimEnd().split('\n')) {
        expect(line.length, line).toBeLessThanOrEqual(100);
        expect(line, line).toMatch(/^ {2}-|^ {32}\S/);
      }
    }
  });
});

describe('the checks of the values', () => {
  const daemon = (argv: string[], env: Record<string, string> = {}) => checkFlags('daemon', parseFlags('daemon', argv), env);

  it('gives each checked value parsed, and leaves a flag not given unset (its default is the server\'s)', () => {
    expect(daemon(['--web.max-requests', '0', '--web.telemetry-path', '/probe/metrics'])).toMatchObject({ 'web.max-requests': 0, 'web.telemetry-path': '/probe/metrics' });
    expect(daemon([])).toEqual({ 'web.telemetry-path': undefined, 'web.config.file': undefined, 'web.external-url': undefined, 'web.max-requests': undefined });
  });

  it.each(['many', '', '0x10', '1e3', '100001'])('--web.max-requests %j is refused naming the flag, without a pointer to --help', (value) => {
    expect(() => daemon(['--web.max-requests', value])).toThrow(FlagValueError);
    expect(() => daemon(['--web.max-requests', value])).toThrow(`--web.max-requests must be a whole number from 0 (no limit) to 100000, got ${JSON.stringify(value)}`);
  });

  it('--web.telemetry-path must be a path', () => {
    expect(() => daemon(['--web.telemetry-path', 'metrics'])).toThrow('--web.telemetry-path must be a path starting with /, got "metrics"');
  });

  it('reads a variable when the flag is not given (an empty one is not given), and names where a bad value came from', () => {
    expect(daemon([], { EXPORTER_WEB_CONFIG_FILE: 'web.yml' })['web.config.file']).toBe('web.yml');
    expect(daemon(['--web.config.file', 'flag.yml'], { EXPORTER_WEB_CONFIG_FILE: 'web.yml' })['web.config.file']).toBe('flag.yml');
    expect(daemon([], { EXPORTER_WEB_CONFIG_FILE: '' })['web.config.file']).toBeUndefined();
    expect(daemon([], { EXPORTER_WEB_EXTERNAL_URL: 'https://exporter.example.com/cmdb/' })['web.external-url']).toEqual({ scheme: 'https', address: 'exporter.example.com:443', pathPrefix: '/cmdb' });
    expect(() => daemon([], { EXPORTER_WEB_EXTERNAL_URL: 'http://user:pw@x:1' })).toThrow(ConfigError);
    expect(() => daemon([], { EXPORTER_WEB_EXTERNAL_URL: 'http://user:pw@x:1' })).toThrow('EXPORTER_WEB_EXTERNAL_URL: must not hold a user name or password');
    expect(() => daemon(['--web.external-url', 'cmdb-exporter:9873'], { EXPORTER_WEB_EXTERNAL_URL: 'http://x:1' })).toThrow('--web.external-url: must be an absolute http(s) URL');
  });

  it('checks for the backfill only the flags it takes, the same way as for the daemon', () => {
    expect(checkFlags('backfill', parseFlags('backfill', ['--web.external-url', 'http://x:1']), {})).toEqual({ 'web.external-url': { scheme: 'http', address: 'x:1', pathPrefix: '' } });
  });

  it('a flag read from a variable names it in its help, for every command that takes it', () => {
    for (const [name, spec] of TABLE.filter(([, s]) => s.env !== undefined)) {
      for (const command of spec.commands) expect(helpOf(command, name).replace(/\s+/g, ' '), name).toContain(`env ${spec.env}`);
    }
  });
});
