/**
 * One fetch at a time per cache folder, across processes (test workers ask for parts at once): a
 * lock folder made with mkdir (atomic), holding the owner's pid. A lock of a process that is gone
 * is taken over; a live owner is waited for, up to WAIT_MS.
 */
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { processAlive } from '../../src/persist/lock.js';

const WAIT_MS = 20 * 60_000;
const POLL_MS = 200;
/** A lock folder without its owner file yet is being made: younger than this, it is not taken over. */
const MAKING_MS = 10_000;

function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function ownerGone(lock: string): boolean {
  let owner: number;
  try {
    owner = Number(readFileSync(join(lock, 'owner'), 'utf8'));
  } catch {
    try {
      return Date.now() - statSync(lock).mtimeMs > MAKING_MS;
    } catch {
      return false;
    }
  }
  return !Number.isInteger(owner) || owner <= 0 || !processAlive(owner);
}

/** One attempt at the lock: true when taken; a lock whose owner is gone is removed (and false returned). */
function tryTake(lock: string): boolean {
  try {
    mkdirSync(lock);
    writeFileSync(join(lock, 'owner'), String(process.pid));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    if (ownerGone(lock)) rmSync(lock, { recursive: true, force: true });
    return false;
  }
}

function waitedTooLong(lock: string): Error {
  return new Error(`waited ${WAIT_MS / 60_000} min for ${lock} (another fetch of test parts); remove it if no fetch is running`);
}

/** Runs `fn` holding the cache's lock (re-entrant within one process). */
let held = 0;
export function withLock<T>(cache: string, fn: () => T): T {
  if (held > 0) return fn();
  const lock = join(cache, '.lock');
  const deadline = Date.now() + WAIT_MS;
  while (!tryTake(lock)) {
    if (Date.now() > deadline) throw waitedTooLong(lock);
    sleep(POLL_MS);
  }
  held++;
  try {
    return fn();
  } finally {
    held--;
    rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * withLock for work that takes minutes (the image test's base): the wait does not block the event
 * loop. Not re-entrant: `fn` must not ask for the same cache's lock.
 */
export async function withLockAsync<T>(cache: string, fn: () => Promise<T>): Promise<T> {
  const lock = join(cache, '.lock');
  const deadline = Date.now() + WAIT_MS;
  while (!tryTake(lock)) {
    if (Date.now() > deadline) throw waitedTooLong(lock);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
