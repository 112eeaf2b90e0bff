/**
 * One reader per resource of a stack's CMDB, for every caller: the daemon's poller reads through
 * `get` (CmdbApi, one endpoint by its descriptor), a backfill through the named readers; both reach
 * the same code. The road: an endpoint's descriptor (src/api/endpoints.ts) says how it is asked, its
 * reader here reads it through the stack's client (src/cmdb/client.ts), and the collector of its
 * area maps what was read (src/collectors/).
 */
import type { CmdbApi, ConnectorHistoryRead, DataEndpoint, GetArgs, ResultOf, ScanReading } from '../../api/endpoints.js';
import type { RequestContext } from '../../api/request-context.js';
import type { ActionJob, ChangeEntry, ConnectorRun, MetricsRecord } from '../../api/schemas.js';
import type { StackConfig } from '../../config/types.js';
import type { Instruments } from '../../metrics/instruments.js';
import type { Logger } from '../../logger.js';
import { sameCredentials, type CmdbClient } from '../client.js';
import { PageReducer } from '../page-reducer.js';
import { ConnectorHistoryReader, continues, type HistorySettings, type ScanProgress } from './connector-history.js';
import type { HistoryReaderState, ScanPosition } from './connector-history-state.js';
import { connectorIo } from './connector-io.js';
import { readList } from './list.js';
import { QueryReader } from './queries.js';
import type { Walked } from './pages.js';
import { readRecord } from './record.js';

export interface StackReadersOptions {
  readonly client: CmdbClient;
  readonly instruments: Instruments;
  /** Already a child bound to { stack }. */
  readonly logger: Logger;
  /** Default: the readers' own, whose worker thread starts at the first large page and stops with close(). */
  readonly pageReducer?: PageReducer;
  /** The connector history reader of the stack's previous runtime (a reload that keeps what it knows). */
  readonly history?: ConnectorHistoryReader;
  /** Else its kept part (--storage.path, historyState()), which the reader goes on from (ConnectorHistoryReader.fromState). */
  readonly historyState?: unknown;
}

/** The connector history reader's settings under a stack's configuration. */
export function historySettings(stack: StackConfig): HistorySettings {
  return {
    pageSize: stack.paging.connectorPageSize,
    maxPages: stack.paging.maxPages,
    fullScanSort: stack.connectorSort,
    fullScanIntervalSeconds: stack.connectorFullScanInterval,
    timeZone: stack.timezone,
    timeoutSeconds: stack.timeoutSeconds,
    retries: stack.retries.max,
  };
}

export class StackReaders implements CmdbApi {
  readonly client: CmdbClient;
  /** The saved queries' field metadata and counts (`data_metadata`, `data_query`). */
  readonly queries: QueryReader;
  private readonly instruments: Instruments;
  private readonly logger: Logger;
  private readonly history: ConnectorHistoryReader;
  private readonly pages: PageReducer;
  private readonly ownsPages: boolean;
  /** The connector read in progress: when it began or last received a page (unix seconds). */
  private connectorMovedAt: number | undefined;

  constructor(opts: StackReadersOptions) {
    this.client = opts.client;
    this.instruments = opts.instruments;
    this.logger = opts.logger;
    this.queries = new QueryReader(opts.client, opts.logger);
    this.ownsPages = !opts.pageReducer;
    this.pages = opts.pageReducer ?? new PageReducer();
    const settings = historySettings(opts.client.settings);
    const restored = opts.historyState === undefined ? undefined : ConnectorHistoryReader.fromState(settings, opts.historyState);
    this.history = opts.history?.reconfigure(settings) ?? restored ?? new ConnectorHistoryReader(settings);
    this.instruments.connectorScanPageSize.set({ stack: this.client.settings.name }, this.history.pageSize());
  }

  /** The stack's settings changed on a reload that keeps its runtime (src/stacks.ts). */
  reconfigure(): void {
    this.history.reconfigure(historySettings(this.client.settings));
  }

  /** One endpoint's result, read by its reader (the poller's way in). */
  async get<E extends DataEndpoint>(endpoint: E, ...[id, ctx = {}]: GetArgs<E>): Promise<ResultOf<E>> {
    switch (endpoint) {
      case 'connector':
        return (await this.readConnectors(ctx)).runs as ResultOf<E>;
      case 'actions':
        return readList({ client: this.client, instruments: this.instruments, logger: this.logger }, 'actions', ctx) as Promise<ResultOf<E>>;
      case 'metrics_data':
        return this.countsOn(undefined, ctx) as Promise<ResultOf<E>>;
      case 'action_jobs':
        return this.actionJobs(id as string, ctx) as Promise<ResultOf<E>>;
      case 'asset_change':
      case 'user_change':
        return this.changes(endpoint, id as string, ctx) as Promise<ResultOf<E>>;
      case 'data_query':
        // A count needs its query, which travels in the body: `queries.count` asks it.
        throw new TypeError('data_query is asked through StackReaders.queries.count, not get()');
      default:
        return readRecord(this.client, endpoint as Exclude<E, 'connector' | 'actions'>, id, ctx) as Promise<ResultOf<E>>;
    }
  }

  /** The asset and user counts now (`day` undefined: the daemon's poll) or of a past day (`yyyy-mm-dd`: a backfill). */
  countsOn(day: string | undefined, ctx: RequestContext = {}): Promise<MetricsRecord> {
    return readRecord(this.client, 'metrics_data', undefined, ctx, day === undefined ? undefined : `date=${encodeURIComponent(day)}`);
  }

  /** An Action's jobs; none (an empty list) when the CMDB answers 404. */
  actionJobs(actionId: string, ctx: RequestContext = {}): Promise<ActionJob[]> {
    return readRecord(this.client, 'action_jobs', actionId, ctx);
  }

  /** The change log of one tracked asset or user; none when the CMDB answers 404. */
  changes(endpoint: 'asset_change' | 'user_change', name: string, ctx: RequestContext = {}): Promise<ChangeEntry[]> {
    return readRecord(this.client, endpoint, name, ctx);
  }

  /** The connector history, newest run per key, and whether it changed since the previous read. */
  async readConnectors(ctx: RequestContext = {}): Promise<ConnectorHistoryRead> {
    const labels = { stack: this.client.settings.name };
    try {
      return await this.history.read(this.connectorIo(ctx), this.client.clock.now() / 1000);
    } finally {
      this.connectorMovedAt = undefined;
      // 0 again once the time has passed.
      this.instruments.connectorIncrementalOffUntil.set(labels, this.history.incrementalOffUntil(this.client.clock.now() / 1000) ?? 0);
    }
  }

  /** Every run of the connector history for a backfill (ConnectorHistoryReader.everyRun), from `from` when it `continuesScan`. */
  async everyConnectorRun(visit: (rows: readonly ConnectorRun[], at: ScanPosition) => void, ctx: RequestContext = {}, from?: ScanPosition): Promise<Walked> {
    try {
      return await this.history.everyRun(this.connectorIo(ctx), visit, from);
    } finally {
      this.connectorMovedAt = undefined;
    }
  }

  /** The connector history as the poller reads it (CmdbApi.scan): the read, and how it shows that it moves. */
  readonly scan: ScanReading = {
    read: (ctx) => this.readConnectors(ctx),
    progress: {
      // Seconds since the connector read last moved (a page arrived, or it began); undefined when none runs.
      idleSeconds: () => (this.connectorMovedAt === undefined ? undefined : this.client.clock.now() / 1000 - this.connectorMovedAt),
      // A read with no page for this long is stuck (until then it runs past its interval): one page's
      // worst case, every attempt timed out, every back-off at its longest, one Retry-After.
      stallSeconds: () => {
        const { timeoutSeconds, retries } = this.client.settings;
        return timeoutSeconds * (retries.max + 1) + retries.maxDelaySeconds * retries.max + retries.maxRetryAfterSeconds + 60;
      },
    },
  };

  /** Whether a connector scan left at `position` goes on from its next page under this stack's settings (else it starts over). */
  continuesScan(position: ScanPosition): boolean {
    return continues(position, historySettings(this.client.settings));
  }

  /** The connector scan in progress or the last one, and until when incremental reads are off (the status page). */
  connectorScan(): { progress?: ScanProgress; incrementalOffUntil?: number; pageSize: number } {
    const progress = this.history.progress();
    const offUntil = this.history.incrementalOffUntil(this.client.clock.now() / 1000);
    return { ...(progress ? { progress } : {}), ...(offUntil === undefined ? {} : { incrementalOffUntil: offUntil }), pageSize: this.history.pageSize() };
  }

  /** The connector history reader for the stack's restarted runtime (no read in flight), when its service, credentials and time zone stay. */
  handOver(previous: StackConfig, next: StackConfig): ConnectorHistoryReader | undefined {
    return sameCredentials(previous, next) && previous.timezone === next.timezone ? this.history : undefined;
  }

  /** The connector history reader's cursor and the pages of a full scan in progress, for a restart (--storage.path); undefined before anything is read. */
  historyState(): HistoryReaderState | undefined {
    return this.history.exportState();
  }

  /** Makes historyState() current: what a full scan in progress kept so far is in the page worker. */
  prepareState(): Promise<void> {
    return this.history.prepareState();
  }

  /** Grows with every page of a full connector scan: the stack's state is worth writing again. */
  stateMark(): number {
    return this.history.scanMark();
  }

  /** Stops the page worker the readers started. */
  async close(): Promise<void> {
    if (this.ownsPages) await this.pages.close();
  }

  private connectorIo(ctx: RequestContext) {
    return connectorIo({ client: this.client, pages: this.pages, instruments: this.instruments, logger: this.logger, moved: (at) => (this.connectorMovedAt = at) }, ctx);
  }
}

export { ConnectorHistoryReader };
