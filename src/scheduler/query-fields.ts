/**
 * The field metadata the saved queries of one stack are checked against, per table (query-poller.ts
 * keeps one). It is read again with the rebuilds (query-schedule.ts metadataDue) and kept with the
 * rebuild it was read for. A query is checked only against metadata read for the rebuild it counts:
 * the metadata of an earlier rebuild would clear a query whose field has gone since, and the service
 * answers a field it does not have with a silent 0. A table whose metadata cannot be read holds
 * what was read before, for the status page only; its queries are not counted until it is read.
 */
import type { EndpointInputs, QueryCounting } from '../api/endpoints.js';
import type { Rebuilds } from '../api/connector-runs.js';
import type { FieldTypes, QueryTable } from '../api/query.js';
import type { FieldMetadata } from '../api/schemas.js';
import { CmdbAbortedError } from '../errors.js';
import type { PollDeadline } from './deadline.js';
import type { PollResult } from './endpoint-runner.js';
import type { PollerParts } from './mapping.js';
import { metadataDue } from './query-schedule.js';

/** Unix seconds as `2026-03-10T12:00:00Z`. */
const isoSeconds = (seconds: number): string => new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');

interface TableFields {
  readonly list: FieldMetadata[];
  readonly types: FieldTypes;
  /** When it was read (unix seconds). */
  readonly at: number;
  /** The table's rebuild it was read for; undefined when none was known. */
  readonly rebuild?: number;
}

export interface QueryFieldsOptions extends Pick<PollerParts, 'runner' | 'now'> {
  /** The stack's query reader; undefined when the readers have none. */
  readonly reader: () => QueryCounting | undefined;
  readonly map: (endpoint: 'data_metadata', input: EndpointInputs['data_metadata']) => PollResult & { kind: 'samples' };
  /** An error as the status page may show it (scrubbed). */
  readonly message: (err: unknown) => string;
}

export class QueryFields {
  private readonly held = new Map<QueryTable, TableFields>();
  private readonly errors = new Map<QueryTable, string>();

  constructor(private readonly opts: QueryFieldsOptions) {}

  /** The field types of `table` to check a query against, or undefined. */
  types(table: QueryTable): FieldTypes | undefined {
    return this.held.get(table)?.types;
  }

  /** Whether the last read of `table`'s metadata failed (then reading it again within the same poll would not help). */
  failed(table: QueryTable): boolean {
    return this.errors.has(table);
  }

  /**
   * Why the queries of `table` cannot be checked now, or undefined when they can: no metadata, or
   * metadata that is not that of the table's newest rebuild (read before it, or a day old).
   */
  uncheckable(table: QueryTable, rebuild: number | undefined): string | undefined {
    if (this.opts.reader() === undefined) return 'the stack has no query reader';
    const fields = this.held.get(table);
    const error = this.errors.get(table) ?? 'not read yet';
    if (fields === undefined) return `the field metadata of table ${table} could not be read: ${error}`;
    if (!metadataDue(fields, rebuild, this.opts.now())) return undefined;
    const since = rebuild !== undefined && (fields.rebuild === undefined || rebuild > fields.rebuild) ? `the rebuild of ${isoSeconds(rebuild)}` : 'a day';
    const failed = this.errors.get(table);
    const state = failed === undefined ? `is not read yet for ${since}` : `could not be read again since ${since} (${failed})`;
    return `the field metadata of table ${table} ${state}; the query is not counted against the metadata read before (a field gone since would count a silent 0)`;
  }

  /**
   * Reads the metadata of `tables` where it is due (a rebuild since, or a day old), as a poll of
   * data_metadata; a table that cannot be read keeps what was read before. `restored`: an earlier
   * process's ledger was taken over, so the endpoint's series are current without a read.
   */
  async readDue(tables: readonly QueryTable[], rebuilds: Rebuilds, ctx: PollDeadline['context'], restored: boolean): Promise<void> {
    const { runner, now, map } = this.opts;
    const reader = this.opts.reader();
    const due = tables.filter((t) => metadataDue(this.held.get(t), rebuilds[t], now()));
    if (due.length === 0 || reader === undefined) {
      // Read before (by this process, or by the one whose ledger it restored): what the store holds is current.
      if (this.held.size > 0 || restored) await runner.run('data_metadata', async () => ({ kind: 'unchanged' }), ctx.signal);
      return;
    }
    await runner.run(
      'data_metadata',
      async () => {
        let error: unknown;
        for (const table of due) {
          try {
            const list = await reader.fields(table, ctx);
            const types = new Map(list.map((f) => [f.fieldName, f.dataType ?? '']));
            const rebuild = rebuilds[table];
            this.held.set(table, { list, types, at: now(), ...(rebuild === undefined ? {} : { rebuild }) });
            this.errors.delete(table);
          } catch (err) {
            if (err instanceof CmdbAbortedError) throw err;
            error ??= err;
            this.errors.set(table, this.opts.message(err));
          }
        }
        const result = map('data_metadata', [...this.held].map(([id, f]) => ({ id, value: f.list })));
        return error === undefined ? result : { kind: 'partial', samples: result.samples, error };
      },
      ctx.signal,
    );
  }
}
