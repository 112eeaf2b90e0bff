/**
 * Secret values to keep out of every output: logs, error messages, /metrics and the status page.
 * Bottom layer: the configuration registers what it reads, the logger and the server scrub with it.
 */
export const REDACTED = '[REDACTED]';

/** Very short values would scrub ordinary words; secrets and tokens are longer than this. */
const MIN_LENGTH = 4;

/**
 * Secret values to scrub from output, of two kinds: values `add`ed stay for the life of the process
 * (the configuration's secrets), and values that are replaced over time (the bearer token of a
 * stack, renewed every time it expires) are `rotate`d under a slot: the slot keeps its current and
 * its previous value (a line about a request sent with the old token may still be written after the
 * renewal) and drops older ones. Every line is checked against every value, so the set must not
 * grow with the process's uptime.
 */
export class SecretScrubber {
  private values = new Set<string>();
  /** Per slot, the values still scrubbed, oldest first (at most KEPT_PER_SLOT). */
  private slots = new Map<string, string[]>();
  private static readonly KEPT_PER_SLOT = 2;

  add(value: string | undefined): void {
    if (value && value.length >= MIN_LENGTH) this.values.add(value);
  }

  /** `value` is now the one of `slot` (a renewed token): it and the slot's previous value are scrubbed, older ones no longer. */
  rotate(slot: string, value: string | undefined): void {
    if (!value || value.length < MIN_LENGTH) return;
    const kept = (this.slots.get(slot) ?? []).filter((v) => v !== value);
    kept.push(value);
    this.slots.set(slot, kept.slice(-SecretScrubber.KEPT_PER_SLOT));
  }

  /** Drops a slot's values (its stack is gone). */
  forget(slot: string): void {
    this.slots.delete(slot);
  }

  /** How many values every line is checked against. */
  get size(): number {
    return this.all().size;
  }

  scrub(text: string): string {
    let out = text;
    for (const v of this.all()) {
      if (out.includes(v)) out = out.split(v).join(REDACTED);
      // Secrets also appear JSON-escaped inside log lines.
      const escaped = JSON.stringify(v).slice(1, -1);
      if (escaped !== v && out.includes(escaped)) out = out.split(escaped).join(REDACTED);
    }
    return out;
  }

  private all(): Set<string> {
    if (this.slots.size === 0) return this.values;
    const out = new Set(this.values);
    for (const kept of this.slots.values()) for (const v of kept) out.add(v);
    return out;
  }
}
