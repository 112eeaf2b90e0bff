/**
 * The answers a backfill has read, kept in --out so that running the same command again asks the
 * CMDB for none of them: at the service's pace reading is the expensive part (a day's counts, an
 * Action's jobs, pages of the connector history that take tens of seconds each).
 *
 * One JSON line per answer, appended as soon as it is read, keyed by stack and unit (`counts/
 * 2026-11-03`, `connector-history`, `action-jobs/<id>`, `asset-changes/<name>`): what a unit is
 * does not depend on how it is read, so the cache holds whatever reads it. A line cut short by a
 * kill is ignored (that unit is read again). Failures are not kept: a run again asks for them.
 */
import { appendFileSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

export const ANSWERS_FILE = 'cmdb-backfill.answers.jsonl';

interface AnswerLine {
  readonly s: string;
  readonly k: string;
  readonly v: unknown;
}

export class AnswerJournal {
  private readonly answers = new Map<string, unknown>();
  /** Answers read by this run (the rest came from the journal). */
  readThisRun = 0;
  readonly path: string;

  constructor(dir: string) {
    this.path = join(dir, ANSWERS_FILE);
    if (!existsSync(this.path)) return;
    for (const line of readFileSync(this.path, 'utf8').split('\n')) {
      if (line === '') continue;
      try {
        const a = JSON.parse(line) as AnswerLine;
        if (typeof a.s === 'string' && typeof a.k === 'string' && 'v' in a) this.answers.set(id(a.s, a.k), a.v);
      } catch {
        // a line cut short when the process was killed: that unit is read again
      }
    }
  }

  has(stack: string, key: string): boolean {
    return this.answers.has(id(stack, key));
  }

  get<T>(stack: string, key: string): T | undefined {
    return this.answers.get(id(stack, key)) as T | undefined;
  }

  /** Keeps an answer: in memory and, before anything else happens, on disk. */
  record(stack: string, key: string, value: unknown): void {
    // JSON has no undefined: an endpoint that answered "nothing" is kept as null.
    const line: AnswerLine = { s: stack, k: key, v: value === undefined ? null : value };
    appendFileSync(this.path, `${JSON.stringify(line)}\n`);
    this.answers.set(id(stack, key), line.v);
    this.readThisRun += 1;
  }

  /** Answers held (from earlier runs and this one). */
  get size(): number {
    return this.answers.size;
  }

  /** Forgets everything (the backfill is complete, or starts over). */
  remove(): void {
    this.answers.clear();
    rmSync(this.path, { force: true });
  }
}

const id = (stack: string, key: string) => `${stack}\u0000${key}`;

/** The journal as one stack's reading sees it. */
export interface StackAnswers {
  has(key: string): boolean;
  get<T>(key: string): T | undefined;
  record(key: string, value: unknown): void;
}

export function stackAnswers(journal: AnswerJournal, stack: string): StackAnswers {
  return {
    has: (key) => journal.has(stack, key),
    get: <T>(key: string) => journal.get<T>(stack, key),
    record: (key, value) => journal.record(stack, key, value),
  };
}
