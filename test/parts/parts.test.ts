/**
 * scripts/parts: the pinned real parts. The fetch itself is proven by every suite that starts a part;
 * here the pieces that decide what is fetched from where, and what a user sees when it cannot be.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { debianMirror, parseAptSources } from '../../scripts/parts/debian.js';
import { checkSha256, currentTier, describePart, overrideVariable, part, PART_NAMES, partsCache, partSpec, removeDanglingLinks, TIERS } from '../../scripts/parts/index.js';

const dir = mkdtempSync(join(tmpdir(), 'cmdb-parts-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the machine\'s Debian mirror', () => {
  it('is read from a deb822 .sources file, leaving the security archive and other vendors out', () => {
    const etc = join(dir, 'etc-deb822');
    mkdirSync(join(etc, 'sources.list.d'), { recursive: true });
    writeFileSync(join(etc, 'sources.list.d', 'a-nodesource.sources'), 'Types: deb\nURIs: https://deb.example.org/node_20.x\nSuites: nodistro\nComponents: main\n');
    writeFileSync(
      join(etc, 'sources.list.d', 'debian.sources'),
      'Types: deb\nURIs: http://mirror.example.net/debian-security\nSuites: bookworm-security\nComponents: main\n\n' +
        'Types: deb\n# a comment\nURIs: http://mirror.example.net/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n',
    );
    expect(debianMirror(etc, {})).toEqual({ uri: 'http://mirror.example.net/debian', suites: ['bookworm', 'bookworm-updates'], signedBy: '/usr/share/keyrings/debian-archive-keyring.gpg' });
  });

  it('is read from a one-line sources.list, options and comments included', () => {
    expect(parseAptSources('# deb http://old/debian sid main\ndeb [arch=amd64 signed-by=/k.gpg] http://m.example/debian trixie main contrib\n', false)).toEqual([
      { uri: 'http://m.example/debian', suites: ['trixie'], signedBy: '/k.gpg' },
    ]);
  });

  it('is named by CMDB_PARTS_DEBIAN_MIRROR, and without any the error says what to set', () => {
    expect(debianMirror(join(dir, 'none'), { CMDB_PARTS_DEBIAN_MIRROR: 'http://x.example/debian' }).uri).toBe('http://x.example/debian');
    expect(() => debianMirror(join(dir, 'none'), {})).toThrow(/CMDB_PARTS_DEBIAN_MIRROR=.*CMDB_PART_<NAME>/s);
  });
});

describe('parts.json', () => {
  it('pins every part for both tiers, each Debian package by version, suite and sha256', () => {
    for (const name of PART_NAMES) {
      for (const tier of TIERS) {
        const spec = partSpec(name, tier);
        expect(spec.file).toBeTruthy();
        for (const deb of spec.debian ?? []) {
          expect(deb.version).toMatch(/^\d/);
          expect(['sid', 'bookworm']).toContain(deb.suite);
          expect(deb.sha256).toMatch(/^[0-9a-f]{64}$/);
        }
        if (!spec.debian) expect(spec.npm?.version).toMatch(/^\d+\.\d+\.\d+$/);
      }
    }
  });

  it('the current tier is Prometheus 3.5, Alertmanager 0.33 and VictoriaMetrics 1.145; the previous 2.42, 0.25 and 1.79', () => {
    const versions = (tier: (typeof TIERS)[number]) => ['prometheus', 'promtool', 'alertmanager', 'victoria-metrics'].map((n) => partSpec(n as never, tier).debian?.[0]?.version.replace(/[+-].*/, ''));
    expect(versions('current')).toEqual(['3.5.3', '3.5.3', '0.33.1', '1.145.0']);
    expect(versions('previous')).toEqual(['2.42.0', '2.42.0', '0.25.0', '1.79.5']);
  });
});

describe('choosing a part', () => {
  it('CMDB_PARTS_TIER takes current or previous and refuses anything else, naming both', () => {
    expect(currentTier({})).toBe('current');
    expect(currentTier({ CMDB_PARTS_TIER: 'previous' })).toBe('previous');
    expect(() => currentTier({ CMDB_PARTS_TIER: 'newest' })).toThrow('CMDB_PARTS_TIER=newest is not a tier: use one of current, previous');
  });

  it("a user's own binary, named by CMDB_PART_<NAME>, is used as it is; one that is not executable is refused naming the variable", () => {
    const own = join(dir, 'my-promtool');
    writeFileSync(own, '#!/bin/sh\n', { mode: 0o755 });
    const variable = overrideVariable('victoria-metrics');
    expect(variable).toBe('CMDB_PART_VICTORIA_METRICS');
    process.env[variable] = own;
    try {
      expect(part('victoria-metrics')).toBe(own);
      expect(describePart('victoria-metrics')).toBe(`victoria-metrics from ${variable}=${own}`);
      process.env[variable] = join(dir, 'missing');
      expect(() => part('victoria-metrics')).toThrow(`${variable}=${join(dir, 'missing')} is not an executable file`);
    } finally {
      delete process.env[variable];
    }
  });

  it('a file whose sha256 is not the pinned one is refused, naming the part and what to do', () => {
    const file = join(dir, 'file.deb');
    writeFileSync(file, 'not the package');
    expect(() => checkSha256(file, '0'.repeat(64), 'prometheus: Debian sid package prometheus 3.5.3+ds1-6')).toThrow(
      /^prometheus: Debian sid package prometheus 3\.5\.3\+ds1-6: sha256 [0-9a-f]{64} is not the pinned 0{64} .*The file was not used/,
    );
  });

  it("a relocated part (Alertmanager's data path) reached through a linked cache leaves no link of its own in the temporary folder", () => {
    const cache = partsCache();
    part('alertmanager');
    const linked = join(dir, 'linked-cache');
    symlinkSync(realpathSync(cache), linked);
    const root = join(import.meta.dirname, '..', '..');
    const exe = execFileSync(process.execPath, ['--import', 'tsx', 'scripts/parts.ts', 'path', 'alertmanager'], { cwd: root, env: { ...process.env, CMDB_PARTS_CACHE: linked }, encoding: 'utf8' }).trim();
    expect(exe.startsWith(linked)).toBe(true);
    const intoLinked = readdirSync(tmpdir())
      .filter((e) => e.startsWith('cmdb-part-'))
      .map((e) => readlinkSync(join(tmpdir(), e)))
      .filter((target) => target.startsWith(linked));
    expect(intoLinked).toEqual([]);
  });

  it('a link of a cache that is gone is removed when a link is made; live links and other files stay', () => {
    const folder = join(dir, 'links');
    mkdirSync(folder);
    writeFileSync(join(folder, 'target'), '');
    symlinkSync(join(folder, 'target'), join(folder, 'cmdb-part-live'));
    symlinkSync(join(folder, 'gone'), join(folder, 'cmdb-part-gone'));
    symlinkSync(join(folder, 'gone'), join(folder, 'other-gone'));
    removeDanglingLinks(join(folder, 'cmdb-part-'));
    expect(readdirSync(folder).sort()).toEqual(['cmdb-part-live', 'other-gone', 'target']);
    expect(existsSync(join(folder, 'cmdb-part-live'))).toBe(true);
  });
});
