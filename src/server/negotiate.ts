/**
 * Which format /metrics answers in, from the Accept header, by its q-values (RFC 9110 §12.5.1):
 * each format we offer gets the q of the most specific range that matches it (a range's
 * parameters must all match the format's; `text/plain` alone matches both text versions), the
 * highest q above 0 wins; on a tie the range the client listed first, then our order: text 0.0.4,
 * text 1.0.0, OpenMetrics 1.0.0, OpenMetrics 0.0.1. No protobuf is offered: a Prometheus that asks
 * for it first gets the next format its header accepts (OpenMetrics). No Accept, an empty one, `*`
 * ranges alone, or nothing acceptable: text 0.0.4, which every scraper reads (a 406 would only lose
 * the scrape).
 *
 * `escaping=` (Prometheus 3, for UTF-8 names) is echoed in the Content-Type as the Prometheus
 * client libraries do: every name here is a legacy name, so no escaping changes a byte.
 */
import type { BodyKind } from '../exposition/formats.js';

interface Offer {
  readonly kind: BodyKind;
  readonly type: string;
  /** The parameters a range may name, with the value they must have. */
  readonly params: Readonly<Record<string, string>>;
  readonly contentType: string;
}

const OFFERS: readonly Offer[] = [
  { kind: 'text', type: 'text/plain', params: { version: '0.0.4' }, contentType: 'text/plain; version=0.0.4; charset=utf-8' },
  { kind: 'text', type: 'text/plain', params: { version: '1.0.0' }, contentType: 'text/plain; version=1.0.0; charset=utf-8' },
  { kind: 'openmetrics', type: 'application/openmetrics-text', params: { version: '1.0.0' }, contentType: 'application/openmetrics-text; version=1.0.0; charset=utf-8' },
  { kind: 'openmetrics', type: 'application/openmetrics-text', params: { version: '0.0.1' }, contentType: 'application/openmetrics-text; version=0.0.1; charset=utf-8' },
];

const ESCAPINGS = new Set(['allow-utf-8', 'underscores', 'dots', 'values']);

export interface Negotiated {
  readonly kind: BodyKind;
  readonly contentType: string;
}

const DEFAULT: Negotiated = { kind: 'text', contentType: OFFERS[0]?.contentType ?? '' };

interface Range {
  readonly type: string;
  readonly subtype: string;
  readonly params: ReadonlyMap<string, string>;
  readonly q: number;
  readonly index: number;
}

function parseRanges(accept: string): Range[] {
  const ranges: Range[] = [];
  accept.split(',').forEach((part, index) => {
    const [media = '', ...rest] = part.split(';').map((p) => p.trim());
    const [type, subtype] = media.toLowerCase().split('/');
    if (!type || !subtype) return;
    const params = new Map<string, string>();
    let q = 1;
    for (const p of rest) {
      const eq = p.indexOf('=');
      if (eq <= 0) continue;
      const name = p.slice(0, eq).trim().toLowerCase();
      const value = p.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1');
      if (name === 'q') {
        const n = Number(value);
        q = Number.isFinite(n) && n >= 0 && n <= 1 ? n : 0;
      } else params.set(name, value);
    }
    ranges.push({ type, subtype, params, q, index });
  });
  return ranges;
}

/** How specifically `range` matches `offer` (higher: more specific), or -1 when it does not. */
function specificity(range: Range, offer: Offer): number {
  const [type, subtype] = offer.type.split('/');
  if (range.type === '*') return range.subtype === '*' ? 0 : -1;
  if (range.type !== type) return -1;
  if (range.subtype === '*') return 1;
  if (range.subtype !== subtype) return -1;
  let named = 0;
  for (const [name, value] of range.params) {
    if (name === 'charset' || name === 'escaping') continue;
    if (offer.params[name] !== value) return -1;
    named++;
  }
  return 2 + named;
}

/** The format to answer an Accept header with, and its Content-Type (with `escaping=` echoed). */
export function negotiate(accept: string | undefined): Negotiated {
  if (!accept) return DEFAULT;
  const ranges = parseRanges(accept);
  let best: { offer: Offer; q: number; index: number; order: number; range: Range } | undefined;
  OFFERS.forEach((offer, order) => {
    let match: Range | undefined;
    let matchSpec = -1;
    for (const r of ranges) {
      const spec = specificity(r, offer);
      if (spec > matchSpec) {
        match = r;
        matchSpec = spec;
      }
    }
    if (!match || match.q <= 0) return;
    // A wildcard range ties with our order, not the client's: `*/*` means text 0.0.4.
    const index = matchSpec <= 1 ? Number.MAX_SAFE_INTEGER : match.index;
    if (!best || match.q > best.q || (match.q === best.q && (index < best.index || (index === best.index && order < best.order)))) {
      best = { offer, q: match.q, index, order, range: match };
    }
  });
  if (!best) return DEFAULT;
  const escaping = best.range.params.get('escaping');
  const contentType = escaping !== undefined && ESCAPINGS.has(escaping) ? `${best.offer.contentType}; escaping=${escaping}` : best.offer.contentType;
  return { kind: best.offer.kind, contentType };
}
