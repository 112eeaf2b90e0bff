/**
 * The answers a backfill has read, kept in --out so that the same command run again asks the CMDB
 * for none of them (docs/backfill.md, "Stoppable and resumable"): a journal (src/persist/journal.ts),
 * one record per answer in its disk form, keyed by stack and unit (`counts/2026-11-03`,
 * `connector-history`, `action-jobs/<id>`, `asset-changes/<name>`). Failures are not kept. A unit
 * read in pages (the connector history) keeps each page as it arrives (connector-scan.ts).
 */
import { join } from 'node:path';
import { Journal, readLines } from '../persist/journal.js';

export const ANSWERS_FILE = 'cmdb-backfill.answers.jsonl';
const HEADER = JSON.stringify({ format: 'cmdb-backfill-answers', version: 2 });

/** An answer (`v`) or a page of one being read (`p`), of stack `s` and unit `k`. */
interface AnswerLine {
  readonly s: string;
  readonly k: string;
  readonly v?: unknown;
  readonly p?: unknown;
}

export class AnswerJournal {
  private readonly answers = new Map<string, unknown>();
  /** Pages of units being read that earlier runs kept, in order; how many each unit has, this run's too. */
  private readonly earlier = new Map<string, unknown[]>();
  private readonly pageCounts = new Map<string, number>();
  private readonly journal: Journal;
  /** The journal on disk starts with this version's header. */
  private headed = false;
  /** Answers read by this run (the rest came from the journal). */
  readThisRun = 0;
  readonly path: string;

  constructor(dir: string) {
    this.path = join(dir, ANSWERS_FILE);
    this.journal = new Journal(this.path, 'disk');
    const read = readLines(this.path);
    // Not a journal of this version (or unreadable): its answers are read again.
    if (read.kind !== 'read' || read.lines[0] !== HEADER) return;
    this.headed = true;
    for (const line of read.lines.slice(1)) {
      try {
        const a = JSON.parse(line) as AnswerLine;
        if (typeof a.s !== 'string' || typeof a.k !== 'string') continue;
        if ('v' in a) this.answers.set(id(a.s, a.k), a.v);
        else if ('p' in a) {
          const unit = id(a.s, a.k);
          const list = this.earlier.get(unit) ?? [];
          list.push(a.p);
          this.earlier.set(unit, list);
          this.countPage(unit);
        }
      } catch {
        // not a record: that unit is read again
      }
    }
  }

  /** The answer kept (null for an endpoint that answered nothing); undefined when there is none. */
  get<T>(stack: string, key: string): T | undefined {
    return this.answers.get(id(stack, key)) as T | undefined;
  }

  /** Keeps an answer (its disk form): in memory and, before anything else happens, on disk. */
  record(stack: string, key: string, value: unknown): void {
    // JSON has no undefined: an endpoint that answered "nothing" is kept as null.
    const line: AnswerLine = { s: stack, k: key, v: value === undefined ? null : value };
    this.append(line);
    this.answers.set(id(stack, key), line.v);
    this.readThisRun += 1;
  }

  /** Keeps a page of a unit being read (its disk form), as record() keeps an answer. */
  recordPage(stack: string, key: string, page: unknown): void {
    this.append({ s: stack, k: key, p: page });
    this.countPage(id(stack, key));
  }

  /** The pages of a unit that earlier runs kept, in the order they arrived. */
  earlierPages(stack: string, key: string): readonly unknown[] {
    return this.earlier.get(id(stack, key)) ?? [];
  }

  private append(line: AnswerLine): void {
    // The header first, whenever the journal starts (new, removed, or of another version).
    if (!this.headed) this.journal.replace([HEADER]);
    this.headed = true;
    this.journal.append(JSON.stringify(line));
  }

  private countPage(unit: string): void {
    this.pageCounts.set(unit, (this.pageCounts.get(unit) ?? 0) + 1);
  }

  /** Pages kept of units that have no answer yet (a scan stopped partway): the next read goes on after them. */
  get pendingPages(): number {
    let n = 0;
    for (const [unit, count] of this.pageCounts) if (!this.answers.has(unit)) n += count;
    return n;
  }

  /** Answers held (from earlier runs and this one). */
  get size(): number {
    return this.answers.size;
  }

  /** Forgets everything (the backfill is complete, or starts over). */
  remove(): void {
    this.answers.clear();
    this.earlier.clear();
    this.pageCounts.clear();
    this.headed = false;
    this.journal.remove();
  }

  close(): void {
    this.journal.close();
  }
}

const id = (stack: string, key: string) => `${stack}\u0000${key}`;

/** The journal as one stack's reading sees it. */
export type StackAnswers = ReturnType<typeof stackAnswers>;

export function stackAnswers(journal: AnswerJournal, stack: string) {
  return {
    get: <T>(key: string) => journal.get<T>(stack, key),
    record: (key: string, value: unknown) => journal.record(stack, key, value),
    earlierPages: (key: string) => journal.earlierPages(stack, key),
    recordPage: (key: string, page: unknown) => journal.recordPage(stack, key, page),
  };
}
