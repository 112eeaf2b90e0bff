/**
 * The links `npm run demo`'s banner prints for a person to open, and which of them do not answer.
 * A link is an http URL on a line of the banner that is not a command to run (the `curl -X POST`
 * lines, the backfill command that starts with its environment): those name URLs to send to, not
 * pages.
 */

/** The banner: from its first line to the backfill command (and the link after it, when there is one). */
export function demoBanner(stdout: string): string {
  const lines = stdout.split('\n');
  const first = lines.findIndex((l) => l.startsWith('cmdb-exporter demo is running'));
  const command = lines.findIndex((l) => l.includes('backfill --config config/demo.yaml'));
  if (first < 0 || command < first) throw new Error(`no whole banner in the demo's output:\n${stdout}`);
  const last = lines[command + 1]?.trimStart().startsWith('then ') ? command + 1 : command;
  return lines.slice(first, last + 1).join('\n');
}

export function bannerLinks(banner: string): string[] {
  const links = new Set<string>();
  for (const line of banner.split('\n')) {
    const text = line.trim();
    if (/^(curl |[A-Z_]+=)/.test(text)) continue;
    for (const m of text.matchAll(/https?:\/\/\S+/g)) links.add(m[0].replace(/[.,;:]$/, ''));
  }
  return [...links];
}

/** `url: status` (or `url: the error`) of every link that does not answer 2xx after its redirects. */
export async function deadLinks(links: readonly string[]): Promise<string[]> {
  const dead: string[] = [];
  for (const url of links) {
    try {
      const r = await fetch(url, { signal: AbortSignal.timeout(10_000) });
      await r.arrayBuffer();
      if (r.status < 200 || r.status > 299) dead.push(`${url}: ${r.status}${r.redirected ? ` at ${r.url}` : ''}`);
    } catch (err) {
      dead.push(`${url}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return dead;
}
