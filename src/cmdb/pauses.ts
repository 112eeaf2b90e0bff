/**
 * The pauses of one stack: the stack's and each endpoint group's, who set each, the run of 429s the
 * next pause grows with, and after a pause the one request at a time that tests the water before
 * the scope widens back to maxConcurrency. policy.ts decides; this remembers and makes requests wait.
 */
import { groupOf, type EndpointName, type GroupName } from '../api/endpoints.js';
import type { PauseScope, StackView } from './policy.js';
import { abortReason, wakeOrAbort, type Clock } from './clock.js';

/** The token endpoint has a pause key of its own; its pauses are the stack's anyway (policy.ts). */
export type PauseKey = GroupName | 'token';

export function pauseKeyOf(endpoint: EndpointName): PauseKey {
  return endpoint === 'access_token' ? 'token' : groupOf(endpoint);
}

export interface Pause {
  readonly scope: PauseScope;
  /** The group held (group pauses only). */
  readonly group?: PauseKey;
  /** ms since the epoch. */
  readonly until: number;
  /** The status that set it (429, 503, …); absent when the token endpoint failed without one. */
  readonly status?: number;
  /** The endpoint whose answer set it, and its request (`GET /CMDB/…`). */
  readonly endpoint: EndpointName;
  readonly request: string;
}

/** A request let through the gate: report what became of it, which ends or keeps the probing. */
export interface GatePass {
  /** `answered`: the CMDB answered and asked nothing (not a 429 or a 5xx); undefined: the request never left. */
  done(answered: boolean | undefined): void;
}

type Scope = 'stack' | PauseKey;

export class Pauses {
  private stackPause: Pause | undefined;
  private readonly groupPauses = new Map<PauseKey, Pause>();
  /** Scopes that were paused: one request at a time until one is answered. */
  private readonly probing = new Set<Scope>();
  private readonly probeInFlight = new Set<Scope>();
  private readonly listeners = new Set<() => void>();
  /** 429s without Retry-After in a row on the stack, and when the pause they set began (ms). */
  private streak = { count: 0, setAt: Number.NEGATIVE_INFINITY };
  /** Answers other than a 429 to the stack's requests, counted: did the CMDB answer others meanwhile? */
  private answerCount = 0;

  constructor(private readonly clock: Clock) {}

  get answers(): number {
    return this.answerCount;
  }

  /** What policy.ts needs to know of the stack for a request of `endpoint` sent at `sentAt`, with `answersBefore` answers counted when it was. */
  view(endpoint: EndpointName, sentAt: number, answersBefore: number): StackView {
    return {
      refusalStreak: this.streak.count,
      newRefusal: sentAt >= this.streak.setAt,
      answeredOthers: this.answerCount > answersBefore,
      othersAskingToWait: this.askingToWait(endpoint),
    };
  }

  /** After a decision: the CMDB answered (not with a 429), and the run of refusals as the policy counts it. */
  record(answered: boolean, refusalStreak: number): void {
    if (answered) this.answerCount++;
    if (refusalStreak > this.streak.count) this.streak = { count: refusalStreak, setAt: this.clock.now() };
    else this.streak = { ...this.streak, count: refusalStreak };
  }

  /** Holds `pause`'s scope until its end (a longer one already in force stays). True when it began a pause rather than extending one. */
  set(pause: Pause): boolean {
    const now = this.clock.now();
    const key: Scope = pause.scope === 'stack' ? 'stack' : (pause.group as PauseKey);
    const current = key === 'stack' ? this.stackPause : this.groupPauses.get(key);
    const began = current === undefined || current.until <= now;
    if (!current || current.until <= now || pause.until > current.until) {
      if (key === 'stack') this.stackPause = pause;
      else this.groupPauses.set(key, pause);
    }
    this.probing.add(key);
    this.changed();
    return began;
  }

  /** The stack's pause in force, if any. */
  stack(): Pause | undefined {
    const p = this.stackPause;
    return p && p.until > this.clock.now() ? p : undefined;
  }

  /** The group pauses in force. */
  groups(): Pause[] {
    const now = this.clock.now();
    return [...this.groupPauses.values()].filter((p) => p.until > now);
  }

  /** When a request of `key` may leave at the earliest (ms): the end of its group's pause or the stack's. */
  until(key: PauseKey): number {
    return Math.max(this.stackPause?.until ?? 0, this.groupPauses.get(key)?.until ?? 0);
  }

  /** A reload is the operator's word that the CMDB may be asked again: every pause ends, and the probing with it. */
  resume(): void {
    this.stackPause = undefined;
    this.groupPauses.clear();
    this.probing.clear();
    this.changed();
  }

  /**
   * Waits until a request of `key` may leave: no pause holds it, and after a pause, no other request
   * of that scope is out testing the water. `onWait` hears of the time waited for a pause.
   */
  async pass(key: PauseKey, signal: AbortSignal | undefined, onWait: (ms: number) => void): Promise<GatePass> {
    for (;;) {
      if (signal?.aborted) throw abortReason(signal);
      const wait = this.until(key) - this.clock.now();
      if (wait > 0) {
        await this.clock.sleep(wait, signal);
        onWait(wait);
        continue;
      }
      const scopes = (['stack', key] as const).filter((s) => this.probing.has(s));
      if (scopes.some((s) => this.probeInFlight.has(s))) {
        await this.nextChange(signal);
        continue;
      }
      for (const s of scopes) this.probeInFlight.add(s);
      return this.gatePass(scopes);
    }
  }

  private gatePass(scopes: readonly Scope[]): GatePass {
    let settled = false;
    return {
      done: (answered) => {
        if (settled || scopes.length === 0) return;
        settled = true;
        for (const s of scopes) {
          this.probeInFlight.delete(s);
          // Answered without being asked to wait: the scope widens back to maxConcurrency.
          if (answered === true) this.probing.delete(s);
        }
        this.changed();
      },
    };
  }

  /** Other endpoints of the stack whose Retry-After pause (a 5xx's) is in force. */
  private askingToWait(endpoint: EndpointName): number {
    const now = this.clock.now();
    const others = new Set<EndpointName>();
    for (const p of [this.stackPause, ...this.groupPauses.values()]) {
      if (p && p.until > now && p.endpoint !== endpoint && p.status !== undefined && p.status >= 500) others.add(p.endpoint);
    }
    return others.size;
  }

  private changed(): void {
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const l of listeners) l();
  }

  private nextChange(signal: AbortSignal | undefined): Promise<void> {
    return wakeOrAbort(signal, (wake) => {
      this.listeners.add(wake);
      return () => this.listeners.delete(wake);
    });
  }
}
