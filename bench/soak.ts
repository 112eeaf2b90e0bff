/**
 * `npm run bench:soak -- [--seconds N]`: the soak's memory, measured, never asserted in a test. The
 * daemon polls a simulator that replaces connectors and Actions and invents status texts every 5 s
 * (scripts/soak.ts); after the warm-up in which the state sets fill to their bound, the resident
 * memory of the last third of the run is compared with the first third's (median of each) and
 * printed, with the series (which the soak test, test/faults/soak.test.ts, holds flat).
 * test/faults/soak.test.ts asserted the RSS ratio (at most 1.10): a figure of the machine's memory
 * manager under load, so it is reported here instead.
 */
import { parseArgs } from 'node:util';
import { formatSoak, RSS_LIMIT, runSoak } from '../scripts/soak.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '60' } } });
const seconds = Number(values.seconds);
if (!(seconds > 0 && seconds <= 86_400)) throw new Error(`--seconds must be a number of seconds (0 < n ≤ 86400), got ${values.seconds}`);
const result = await runSoak({ seconds });
console.log(formatSoak(result));
console.log(`RSS last third / first third: ${result.rssRatio.toFixed(3)} (flat up to ${RSS_LIMIT.toFixed(2)}: ${result.rssRatio <= RSS_LIMIT ? 'flat' : 'grew'})`);
