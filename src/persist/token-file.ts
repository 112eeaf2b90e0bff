/**
 * The daemon's current token of each stack, kept in its --storage.path for a backfill run beside it
 * with the same client id: a CMDB may keep one token per client id, so two processes that each ask
 * for their own take each other's all along (docs/backfill.md, "A client id of the backfill's own,
 * or the daemon's folder"). `DIR/cmdb-exporter.tokens.json` names each stack's token with the hash
 * of its base URL and client id (document.ts serviceOf), written by atomic.ts at each grant (0600).
 * The one file a token is written to: never logged (a failed write is logged with the folder and
 * the error's code only, once, and never stops a poll), removed at the daemon's start and stop.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { StackConfig } from '../config/types.js';
import type { Logger } from '../logger.js';
import { serviceOf, writeDocumentSync } from './document.js';
import { runningHolder, type LockHolder } from './lock.js';

export const TOKENS_FILE = 'cmdb-exporter.tokens.json';
const FORMAT = 'cmdb-exporter-tokens';
const VERSION = 1;
const ABOUT = "cmdb-exporter: the daemon's current CMDB token of each stack, for a backfill given this folder (--storage.path) with the same client id. Secret; removed when the daemon stops.";

interface TokenEntry {
  /** serviceOf(stack): the base URL and client id the token was granted for. */
  readonly service: string;
  readonly token: string;
}

/** The daemon's side: keeps each stack's newest token in the file. */
export class TokenKeeper {
  private readonly entries = new Map<string, TokenEntry>();
  private failing = false;
  private stopped = false;

  constructor(
    private readonly dir: string,
    private readonly logger: Logger,
  ) {
    // A killed daemon's tokens are not this one's.
    removeTokens(dir);
  }

  /** The token just granted to `stack`: written at once. */
  keep(stack: StackConfig, token: string): void {
    if (this.stopped) return;
    this.entries.set(stack.name, { service: serviceOf(stack), token });
    try {
      writeDocumentSync(join(this.dir, TOKENS_FILE), { format: FORMAT, version: VERSION, about: ABOUT, stacks: Object.fromEntries(this.entries) } as { format: string; version: number });
      if (this.failing) this.logger.info({ storagePath: this.dir }, 'the current token is kept in --storage.path again, for a backfill given it');
      this.failing = false;
    } catch (err) {
      if (!this.failing) {
        this.logger.warn(
          { storagePath: this.dir, code: (err as NodeJS.ErrnoException).code },
          'the current token could not be kept in --storage.path: a backfill given this folder asks for tokens of its own meanwhile (polling goes on)',
        );
      }
      this.failing = true;
    }
  }

  /** The folder is no longer this process's (its lock was taken): nothing more is written, nothing removed. */
  abandon(): void {
    this.stopped = true;
  }

  /** The daemon stops: its tokens leave the disk. */
  close(): void {
    if (this.stopped) return;
    this.stopped = true;
    removeTokens(this.dir);
  }
}

function removeTokens(dir: string): void {
  try {
    rmSync(join(dir, TOKENS_FILE), { force: true });
  } catch {
    // A folder that cannot be written says so at its first write.
  }
}

/**
 * What a backfill finds in a daemon's folder for `stack`: the daemon that holds it now (none: no
 * running daemon holds it), and its token for the stack's base URL and client id, if it has one;
 * `problem` when the file is there but cannot be read (its error code, never its content).
 */
export interface DaemonToken {
  readonly daemon: LockHolder | undefined;
  readonly token?: string;
  readonly problem?: string;
}

export function daemonToken(dir: string, stack: StackConfig): DaemonToken {
  const holder = runningHolder(dir);
  if (!holder || holder.command !== 'daemon') return { daemon: undefined };
  let text: string;
  try {
    text = readFileSync(join(dir, TOKENS_FILE), 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? { daemon: holder } : { daemon: holder, problem: `${TOKENS_FILE} cannot be read (${code ?? 'error'})` };
  }
  let doc: { format?: unknown; version?: unknown; stacks?: Record<string, Partial<TokenEntry>> };
  try {
    doc = JSON.parse(text) as typeof doc;
  } catch {
    // Never the parser's message: it may quote the file, a token.
    return { daemon: holder, problem: `${TOKENS_FILE} is not whole` };
  }
  if (doc.format !== FORMAT || doc.version !== VERSION) return { daemon: holder, problem: `${TOKENS_FILE} is of another version of the exporter` };
  const service = serviceOf(stack);
  const entry = Object.values(doc.stacks ?? {}).find((e) => e?.service === service && typeof e.token === 'string' && e.token !== '');
  return entry ? { daemon: holder, token: entry.token as string } : { daemon: holder };
}
