/**
 * Which format /metrics answers in, by the Accept header's q-values (RFC 9110 §12.5.1, `negotiator`:
 * on a tie the more specific range, then the one listed first, then our order below), with
 * Prometheus 3's `escaping=` echoed in the Content-Type as the client libraries do (docs/formats.md).
 * No Accept, an empty one or nothing acceptable: text 0.0.4, which every scraper reads (a 406
 * would only lose the scrape). No protobuf is offered: who asks for it first gets OpenMetrics next.
 */
import Negotiator from 'negotiator';
import type { BodyKind } from '../exposition/formats.js';

/** Each format's Content-Type, in our order; a range's `charset=` must name utf-8 to match. */
const OFFERS: Readonly<Record<string, BodyKind>> = {
  'text/plain; version=0.0.4; charset=utf-8': 'text',
  'text/plain; version=1.0.0; charset=utf-8': 'text',
  'application/openmetrics-text; version=1.0.0; charset=utf-8': 'openmetrics',
  'application/openmetrics-text; version=0.0.1; charset=utf-8': 'openmetrics',
};
const CONTENT_TYPES = Object.keys(OFFERS);
const ESCAPINGS = ['allow-utf-8', 'underscores', 'dots', 'values'];

export interface Negotiated {
  readonly kind: BodyKind;
  readonly contentType: string;
}

/** The last 64 Accept headers' answers: a scraper repeats its header, and negotiator takes 50–100 µs for one. */
const answers = new Map<string | undefined, Negotiated>();

/** The format to answer an Accept header with, and its Content-Type (with `escaping=` echoed). */
export function negotiate(accept: string | undefined): Negotiated {
  const known = answers.get(accept);
  if (known) return known;
  // escaping= is no condition of a match: the format is chosen without it, then the escaping the
  // chosen format was asked with (an unknown one is not echoed).
  const unescaped = accept?.replace(/;\s*escaping\s*=[^;,]*/gi, '');
  const chosen = new Negotiator({ headers: { accept: unescaped } }).mediaType(CONTENT_TYPES) ?? (CONTENT_TYPES[0] as string);
  const escaped = ESCAPINGS.map((escaping) => `${chosen}; escaping=${escaping}`);
  const contentType = new Negotiator({ headers: { accept } }).mediaType([chosen, ...escaped]) ?? chosen;
  const answer: Negotiated = { kind: OFFERS[chosen] ?? 'text', contentType };
  if (answers.size >= 64) answers.clear();
  answers.set(accept, answer);
  return answer;
}
