/**
 * `npm run parts`: fetches the pinned real parts (scripts/parts/parts.json) into the cache and says
 * where they are. The tests and the demo fetch what they need on first use; this is for a machine
 * that should have them ahead (an offline laptop, a CI image) and for looking.
 *
 *   npm run parts                      every part of the current tier (CMDB_PARTS_TIER)
 *   npm run parts -- --tier previous   ... of the previous tier; --tier all for both
 *   npm run parts -- path promtool     the path of one part, fetched if needed (for shell scripts)
 *   npm run parts -- --repin           pins what Debian's suites carry now (prints the changes)
 *   npm run parts -- --prune           removes cached versions parts.json no longer names
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { suiteCarries } from './parts/debian.js';
import { currentTier, fetchAll, part, PART_NAMES, partsCache, TIERS, unusedCacheEntries, type PartName, type Tier } from './parts/index.js';

const MANIFEST = fileURLToPath(new URL('./parts/parts.json', import.meta.url));

function usage(message?: string): never {
  if (message) console.error(message);
  console.error('usage: npm run parts [-- --tier current|previous|all | path <part> | --repin | --prune]');
  console.error(`parts: ${PART_NAMES.join(', ')}`);
  process.exit(2);
}

interface Deb {
  package: string;
  version: string;
  suite: string;
  sha256: string;
}

/** Every Debian package of parts.json pinned to what its suite carries now. */
function repin(): void {
  const text = readFileSync(MANIFEST, 'utf8');
  const manifest = JSON.parse(text) as { parts: Record<string, Record<string, { debian?: Deb[] }>> };
  const seen = new Map<string, { version: string; sha256: string } | undefined>();
  let changes = 0;
  for (const [name, tiers] of Object.entries(manifest.parts)) {
    for (const spec of Object.values(tiers)) {
      for (const deb of spec.debian ?? []) {
        const key = `${deb.suite}/${deb.package}`;
        if (!seen.has(key)) seen.set(key, suiteCarries(join(partsCache(), 'apt'), deb.package, deb.suite));
        const now = seen.get(key);
        if (!now) {
          console.error(`${name}: Debian ${deb.suite} carries no ${deb.package} now; left at ${deb.version}`);
          continue;
        }
        if (now.version === deb.version && now.sha256 === deb.sha256) continue;
        console.log(`${name}: ${deb.package} ${deb.version} -> ${now.version} (${deb.suite})`);
        deb.version = now.version;
        deb.sha256 = now.sha256;
        changes++;
      }
    }
  }
  if (changes > 0) writeFileSync(MANIFEST, `${JSON.stringify(manifest, null, 2)}\n`);
  console.log(changes > 0 ? `${changes} pin(s) changed in scripts/parts/parts.json: run the suites before committing` : 'every pin is what its suite carries');
}

function main(argv: string[]): void {
  if (argv[0] === 'path') {
    const name = argv[1] as PartName | undefined;
    if (!name || !PART_NAMES.includes(name)) usage(`unknown part ${argv[1] ?? '(none)'}`);
    console.log(part(name));
    return;
  }
  if (argv[0] === '--repin') return repin();
  if (argv[0] === '--prune') {
    for (const dir of unusedCacheEntries()) {
      rmSync(dir, { recursive: true, force: true });
      console.log(`removed ${dir}`);
    }
    return;
  }
  let tiers: Tier[] = [currentTier()];
  if (argv[0] === '--tier') {
    const wanted = argv[1];
    if (wanted === 'all') tiers = [...TIERS];
    else if ((TIERS as readonly string[]).includes(wanted ?? '')) tiers = [wanted as Tier];
    else usage(`--tier takes ${TIERS.join(', ')} or all`);
  } else if (argv.length > 0) usage(`unknown argument ${argv[0]}`);
  console.log(`cache: ${partsCache()}`);
  for (const tier of tiers) {
    console.log(`${tier}:`);
    for (const { what, path } of fetchAll(tier)) console.log(`  ${what}\n    ${path}`);
  }
}

try {
  main(process.argv.slice(2));
} catch (err) {
  console.error(err instanceof Error ? err.message : String(err));
  process.exit(1);
}
