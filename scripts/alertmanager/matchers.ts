/**
 * The mixin's PromQL label matchers (jobSelector, stackSelector) as Alertmanager route matchers. An
 * alert may lack the label (CmdbExporterAbsent with a regex job selector has no job; the exporter's
 * own alerts have no stack), and Alertmanager reads a missing label as "": each matcher is widened
 * to accept "" too, so that those alerts still take the CMDB route.
 */

const MATCHER = /^\s*([A-Za-z_]\w*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*$/;

/** One matcher per element, split where the mixin splits them (a comma before a label name). */
export function splitMatchers(selector: string): string[] {
  return selector === '' ? [] : selector.split(/,(?=\s*[A-Za-z_]\w*\s*(?:=~|!~|!=|=))/).map((m) => m.trim());
}

function regexQuote(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** `job="x"` → `job=~"x|"`, `stack=~"prod-.*"` → `stack=~"(?:prod-.*)|"`; != and !~ accept "" already. */
export function acceptingAbsent(matcher: string): string {
  const m = MATCHER.exec(matcher);
  if (!m) throw new Error(`not a label matcher: ${JSON.stringify(matcher)}`);
  const [, label, op, quoted] = m as unknown as [string, string, string, string];
  // The quoted text as PromQL wrote it: escapes stay escaped, which is also how Alertmanager reads them.
  if (op === '=') return quoted === '' ? `${label}=""` : `${label}=~"${regexQuote(JSON.parse(`"${quoted}"`) as string).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}|"`;
  if (op === '=~') return `${label}=~"(?:${quoted})|"`;
  return `${label}${op}"${quoted}"`;
}
