/**
 * A backfill's read of the connector run history: one full scan through the stack's connector
 * reader, reduced to what the range needs (RangeRows) and kept page by page in the daemon's disk
 * form, so that a scan stopped partway goes on from its next page at the next run when the reader
 * `continuesScan` under today's settings, else starts over (docs/backfill.md, "What a re-run
 * continues from").
 */
import { runForDisk, runKey, runTime } from '../api/connector-runs.js';
import type { ConnectorRun } from '../api/schemas.js';
import { ScanStateSchema, type ScanPosition } from '../cmdb/readers/connector-history-state.js';
import type { StackReaders } from '../cmdb/readers/index.js';
import type { StackAnswers } from './answers.js';

/** The unit's key in the answers (its pages are kept under it too). */
export const CONNECTOR_UNIT = 'connector-history';

/**
 * Keeps per connector key the newest row at or before `from` and every row in (from, to]: what a
 * replay of the range needs, whatever the length of the history before it. A row met twice (rows
 * written during the scan push the older ones onto the next page) is kept once.
 */
export class RangeRows {
  private readonly before = new Map<string, { run: ConnectorRun; time: number }>();
  private readonly inside: ConnectorRun[] = [];
  private readonly seenInside = new Set<string>();

  constructor(
    private readonly from: number,
    private readonly to: number,
    private readonly timeZone: string,
  ) {}

  /**
   * Takes what the range needs of `rows` and returns it: folded into a new RangeRows in order, the
   * rows taken leave it as this one is (what a page keeps of itself).
   */
  add(rows: readonly ConnectorRun[]): ConnectorRun[] {
    const took: ConnectorRun[] = [];
    for (const run of rows) {
      const t = runTime(run, this.timeZone);
      // A row without a time cannot be placed on the range.
      if (t === undefined || t > this.to) continue;
      const key = runKey(run);
      if (t > this.from) {
        const id = `${key}@${t}`;
        if (this.seenInside.has(id)) continue;
        this.seenInside.add(id);
        this.inside.push(run);
        took.push(run);
        continue;
      }
      const best = this.before.get(key);
      if (best && t < best.time) continue;
      this.before.set(key, { run, time: t });
      took.push(run);
    }
    return took;
  }

  rows(): ConnectorRun[] {
    return [...[...this.before.values()].map((b) => b.run), ...this.inside];
  }
}

/**
 * The scan the kept pages leave, if it can go on (where it stands, and the rows its pages took): the
 * pages of the last scan begun, in an unbroken line from its first (a page that does not read back,
 * or a gap, and what follows it is not continued). Pages of a scan that started over are left behind.
 */
export function keptScan(pages: readonly unknown[]) {
  let line: Array<{ position: ScanPosition; runs: ConnectorRun[] }> = [];
  for (const kept of pages) {
    const parsed = ScanStateSchema.safeParse(kept);
    if (!parsed.success) {
      line = [];
      continue;
    }
    const { runs, ...position } = parsed.data;
    const last = line.at(-1)?.position;
    if (position.pagesRead === 1) line = [{ position, runs }];
    else if (last && position.startedAt === last.startedAt && position.pagesRead === last.pagesRead + 1) line.push({ position, runs });
    else line = [];
  }
  const last = line.at(-1);
  return last && { position: last.position, runs: line.flatMap((p) => p.runs), pages: line.length };
}

export interface ConnectorScanOptions {
  readonly readers: StackReaders;
  readonly answers: StackAnswers;
  readonly from: number;
  readonly to: number;
  readonly timeZone: string;
  /** After each page but the first (the one the plan counts). */
  readonly furtherPage: () => void;
  readonly signal?: AbortSignal;
}

/** The rows of the connector history the range needs, in their disk form: from the pages kept by earlier runs on, each page kept as it arrives. */
export async function readConnectorRuns(o: ConnectorScanOptions): Promise<ConnectorRun[]> {
  const kept = new RangeRows(o.from, o.to, o.timeZone);
  const earlier = keptScan(o.answers.earlierPages(CONNECTOR_UNIT));
  const goesOn = earlier && o.readers.continuesScan(earlier.position) ? earlier : undefined;
  if (goesOn) kept.add(goesOn.runs);
  let seen = 0;
  await o.readers.everyConnectorRun(
    (rows, at) => {
      // Kept before the next page is asked: a stop after this loses no more than the page in flight.
      o.answers.recordPage(CONNECTOR_UNIT, { ...at, runs: kept.add(rows).map(runForDisk) });
      if (++seen > 1) o.furtherPage();
    },
    { signal: o.signal },
    goesOn?.position,
  );
  // Kept (and replayed, in this run as in the next) in the daemon's disk form: no event texts.
  return kept.rows().map(runForDisk);
}
