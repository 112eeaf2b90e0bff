/**
 * The IO of the connector history reader (connector-history.ts): its pages asked through the
 * stack's client, parsed and reduced in the page worker (page-reducer.ts), the kept rows validated
 * at the end; and what a scan says on its way (the scan metrics, the warnings, a read event for the
 * poll plan). The reader decides what to ask; this file only asks and reports.
 */
import { ConnectorPageSchema, validate, type ConnectorRun } from '../../api/schemas.js';
import { CmdbInvalidBodyError, CmdbTimeoutError } from '../../errors.js';
import type { Instruments } from '../../metrics/instruments.js';
import type { Logger } from '../../logger.js';
import type { RequestContext } from '../../api/request-context.js';
import { pathsOf } from '../../api/endpoints.js';
import { jsonDecoder } from '../body.js';
import type { Reply } from '../attempt.js';
import type { CmdbClient } from '../client.js';
import type { PageAnswer, PageReducer } from '../page-reducer.js';
import { requestName } from '../transport.js';
import { INCREMENTAL_SORT } from './connector-history.js';
import type { EveryRunPage, HistoryIo, HistoryPage, ScanProgress } from './connector-history-types.js';
import { reportTruncated } from './list.js';
import { pageQuery } from './pages.js';

const ENDPOINT = 'connector';

export interface ConnectorIoOptions {
  readonly client: CmdbClient;
  readonly pages: PageReducer;
  readonly instruments: Instruments;
  readonly logger: Logger;
  /** Where the read in progress stands: when it began or last received a page (unix seconds), undefined once it ended. */
  readonly moved: (at: number | undefined) => void;
}

/** What a page says (its rows stay in the scan); a body that is not a page object is validated whole. */
function decodeHistoryPage(answer: PageAnswer, request: string, extra: ConnectorRun[]): Omit<HistoryPage, 'bytes' | 'seconds'> {
  if (answer.kind === 'not_json') throw new CmdbInvalidBodyError(request, '', 'not JSON', { notJson: true });
  const body = answer.kind === 'page' ? { ...answer.envelope, content: [] } : answer.body;
  const result = validate(ConnectorPageSchema, body);
  if (!result.ok) throw new CmdbInvalidBodyError(request, result.field, result.message);
  const fields = result.value;
  if (answer.kind === 'page') {
    const { sorted, first, last, min, count, fresh, firstFresh } = answer;
    return { count, fields, sorted, first, last, min, fresh, firstFresh };
  }
  // A bare list cannot say it is sorted: an incremental read falls back to a full scan.
  for (const run of fields.content) extra.push(run);
  return { count: fields.content.length, fields, sorted: false };
}

/** Rows validated per slice, the event loop free between slices (a scan keeps ~1,000 rows). */
const VALIDATE_SLICE = 200;

async function validateRows(rows: readonly unknown[], request: string): Promise<ConnectorRun[]> {
  const out: ConnectorRun[] = [];
  for (let start = 0; start < rows.length; start += VALIDATE_SLICE) {
    if (start > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const result = validate(ConnectorPageSchema, { content: rows.slice(start, start + VALIDATE_SLICE) });
    if (!result.ok) {
      // Name the row by its place among the kept rows of the scan.
      const field = result.field.replace(/^content\[(\d+)\]/, (_m, i: string) => `content[${Number(i) + start}]`);
      throw new CmdbInvalidBodyError(request, field, result.message);
    }
    for (const run of result.value.content) out.push(run);
  }
  return out;
}

const decodeEveryRunPage = jsonDecoder(ConnectorPageSchema);

/** The IO of one read of the connector history for `ctx`'s poll (or a backfill). */
export function connectorIo(opts: ConnectorIoOptions, ctx: RequestContext): HistoryIo {
  const { client, pages, instruments: ins, logger } = opts;
  const stack = client.settings.name;
  const labels = { stack };
  const path = requestName('GET', pathsOf(ENDPOINT)[0] ?? '');
  const now = () => client.clock.now() / 1000;
  /** One page, decoded, with its body's bytes and the seconds it took. */
  const fetch = async <T>(page: number, size: number, sort: string | undefined, decode: (reply: Reply, name: string) => T | Promise<T>): Promise<T & { bytes: number; seconds: number }> => {
    let bytes = 0;
    const started = client.clock.now();
    const measured = (reply: Reply, name: string) => {
      bytes = reply.body.length;
      return decode(reply, name);
    };
    // A timed-out page is not asked again at the same size: the reader halves it.
    const answer = await client.get({ endpoint: ENDPOINT, query: pageQuery(page, size, sort), decode: measured, retryTimeouts: false }, ctx);
    if (!answer.found) throw answer.error;
    return { ...answer.value, bytes, seconds: (client.clock.now() - started) / 1000 };
  };
  return {
    scan: (known) => {
      const session = pages.beginScan(known);
      // Rows of bodies that are not page objects (a bare list), already validated here.
      const extra: ConnectorRun[] = [];
      return {
        fetchPage: (page, size, sort) => fetch(page, size, sort, async (reply, name) => decodeHistoryPage(await session.page(reply.body), name, extra)),
        rows: async () => [...(await validateRows(await session.finish(), path)), ...extra],
        peek: async () => [...(await validateRows(await session.peek(), path)), ...extra],
        drop: () => session.drop(),
      };
    },
    everyRunPage: (page, size, sort) =>
      fetch(page, size, sort, (reply, name): EveryRunPage => {
        const body = decodeEveryRunPage(reply, name);
        return { count: body.content.length, fields: body, sorted: false, rows: body.content };
      }),
    now,
    scanned: (kind, read) => {
      ins.connectorScans.inc({ stack, kind });
      client.events.reads.emit({ endpoint: ENDPOINT, kind, pages: read, rows: 0 });
    },
    unsorted: (page, offUntil) => {
      ins.connectorSortFallbacks.inc(labels);
      ins.connectorIncrementalOffUntil.set(labels, offUntil ?? 0);
      logger.warn(
        { endpoint: ENDPOINT, page, sort: INCREMENTAL_SORT, ...(offUntil === undefined ? {} : { incrementalOffUntil: new Date(offUntil * 1000).toISOString() }) },
        offUntil === undefined
          ? 'the connector history came back not sorted by _time descending: this poll reads every page instead'
          : 'the connector history came back not sorted by _time descending again: incremental reads are off until the time given, every poll reads every page',
      );
    },
    truncated: (rows) => reportTruncated(opts, ENDPOINT, rows),
    progress: (p: ScanProgress) => {
      opts.moved(p.endedAt === undefined ? p.lastPageAt : undefined);
      if (p.kind !== 'full') return;
      ins.connectorScanInProgress.set(labels, p.endedAt === undefined ? 1 : 0);
      ins.connectorScanPagesRead.set(labels, p.pagesRead);
      ins.connectorScanPagesExpected.set(labels, p.pagesTotal ?? 0);
      ins.connectorScanBytes.set(labels, p.bytes);
      ins.connectorScanStart.set(labels, p.startedAt);
      ins.connectorScanPageSize.set(labels, p.pageSize);
    },
    pageSize: (size, previous, reason) => {
      ins.connectorScanPageSize.set(labels, size);
      if (reason === 'timeout') {
        logger.warn(
          { endpoint: ENDPOINT, pageSize: size, previousPageSize: previous, timeoutSeconds: client.settings.timeoutSeconds },
          'a connector history page timed out: asking for smaller pages from here on (raise timeoutSeconds or lower paging.connectorPageSize if this repeats)',
        );
      } else {
        logger.info({ endpoint: ENDPOINT, pageSize: size, previousPageSize: previous }, 'connector history pages come back fast again: larger pages from the next full scan');
      }
    },
    isPageTimeout: (err) => err instanceof CmdbTimeoutError,
  };
}
