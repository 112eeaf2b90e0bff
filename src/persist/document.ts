/**
 * Documents: every file the exporter writes whole says what it is (`format`) and in which version
 * of its form (`version`), and is written by the one recipe of atomic.ts. A document of another
 * format or version is not read as this one.
 *
 * The envelope of one stack's state file: what it is, which format version, which stack and which
 * CMDB account it belongs to, when it was written, and the parts (each component's own versioned
 * state, see src/stack-state.ts). Only state that belongs to the stack as configured now is used:
 * another format or version, another stack name, another base URL or client id is discarded.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { StackConfig } from '../config/types.js';
import { writeAtomicSync } from './atomic.js';

/** What every document says of itself. */
export interface Versioned {
  readonly format: string;
  readonly version: number;
}

/** A document as read: its value, none (no file), unreadable (not JSON, cut short), or another format or version. */
export type DocumentRead =
  | { readonly kind: 'read'; readonly value: Readonly<Record<string, unknown>> & Versioned }
  | { readonly kind: 'missing' }
  | { readonly kind: 'unreadable'; readonly reason: string }
  | { readonly kind: 'other'; readonly reason: string };

/** The document at `path` when it is of `format` in `version`. */
export function readDocumentSync(path: string, format: string, version: number): DocumentRead {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'missing' };
    return { kind: 'unreadable', reason: (err as Error).message };
  }
  if (!isRecord(value) || value.format !== format) return { kind: 'other', reason: `it is not a ${format} document` };
  if (value.version !== version) return { kind: 'other', reason: `it is in version ${String(value.version)} of ${format}, this exporter reads version ${version}` };
  return { kind: 'read', value: value as Record<string, unknown> & Versioned };
}

/** Writes a small document as JSON text (one key a line, for people to read), atomically and durably. */
export function writeDocumentSync(path: string, doc: Versioned): void {
  writeAtomicSync(path, `${JSON.stringify(doc, null, 1)}\n`);
}

export const STATE_FORMAT = 'cmdb-exporter-state';
export const STATE_VERSION = 1;

/** State older than this is served but not continued from (docs/restarts.md, "What is read back"). */
export const REFRESH_AFTER_SECONDS = 3600;

export interface StackDocument {
  readonly format: typeof STATE_FORMAT;
  readonly version: typeof STATE_VERSION;
  readonly stack: string;
  /** serviceOf(stack): the CMDB and account the state was read from. */
  readonly service: string;
  /** Unix seconds. */
  readonly writtenAt: number;
  readonly parts: Readonly<Record<string, unknown>>;
}

/**
 * Who the state was read from: a hash of the base URL, the kind of credentials and the client id,
 * never of a secret or token (a rotated secret or token keeps the state; another account does not).
 * Hashed so that a state file names neither the CMDB's address nor the client id (the configuration
 * refuses a base URL with user:password@, so no credential is in either).
 */
export function serviceOf(stack: StackConfig): string {
  const who = [stack.baseUrl, stack.auth.kind, stack.auth.kind === 'client' ? stack.auth.clientId : ''];
  return createHash('sha256').update(JSON.stringify(who)).digest('hex');
}

export type Verdict =
  | { readonly ok: true; readonly doc: StackDocument }
  | { readonly ok: false; readonly corrupt: boolean; readonly reason: string };

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** Whether `value` (a parsed file) is state of `stack` as configured now, and if not, why. */
export function checkDocument(value: unknown, stack: StackConfig): Verdict {
  if (!isRecord(value) || value.format !== STATE_FORMAT) return { ok: false, corrupt: true, reason: 'not a state file of cmdb-exporter' };
  if (value.version !== STATE_VERSION) return { ok: false, corrupt: false, reason: `written in state format ${String(value.version)}, this exporter reads ${STATE_VERSION}` };
  if (typeof value.writtenAt !== 'number' || !Number.isFinite(value.writtenAt) || !isRecord(value.parts) || typeof value.service !== 'string') {
    return { ok: false, corrupt: true, reason: 'its header is incomplete' };
  }
  if (value.stack !== stack.name) return { ok: false, corrupt: false, reason: `it holds the state of stack ${JSON.stringify(value.stack)}` };
  if (value.service !== serviceOf(stack)) return { ok: false, corrupt: false, reason: 'it was read from another base URL or client id' };
  return { ok: true, doc: value as unknown as StackDocument };
}
