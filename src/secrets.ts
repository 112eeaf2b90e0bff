/**
 * Secret values to keep out of every output: logs, error messages, /metrics and the status page.
 * Bottom layer: the configuration registers what it reads, the logger and the server scrub with it.
 */
export const REDACTED = '[REDACTED]';

/** Secret values to scrub from output. Shared by the logger, error messages and the landing page. */
export class SecretScrubber {
  private values = new Set<string>();

  add(value: string | undefined): void {
    // Very short values would scrub ordinary words; secrets and tokens are longer than this.
    if (value && value.length >= 4) this.values.add(value);
  }

  clear(): void {
    this.values = new Set();
  }

  scrub(text: string): string {
    let out = text;
    for (const v of this.values) {
      if (out.includes(v)) out = out.split(v).join(REDACTED);
      // Secrets also appear JSON-escaped inside log lines.
      const escaped = JSON.stringify(v).slice(1, -1);
      if (escaped !== v && out.includes(escaped)) out = out.split(escaped).join(REDACTED);
    }
    return out;
  }
}
