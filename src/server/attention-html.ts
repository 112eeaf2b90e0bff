/**
 * The "What needs attention" section of the status page: per stack with a problem (critical stacks
 * first), its cause first (one critical line: what, since when, how old the data below it is, the
 * lines it explains folded under it), then every other problem, critical first, each with since
 * when, marked new when it appeared since the viewer last looked (on a first look: in the newest
 * poll of its endpoint), and a "what to do" link to its runbook section.
 */
import { escapeHtml } from './html.js';
import { relativeTime, shortDuration } from './attention.js';
import { iso } from './endpoint-table.js';
import type { LandingStack } from './landing-model.js';
import type { CauseLine, Line, StackView } from './stack-view.js';

/** Where the runbooks are when the configuration names no other place: the exporter serves docs/alerts.md itself. */
export const SERVED_RUNBOOKS = 'docs/alerts';

/** The runbook section of the alert that fires for the same problem (docs/alerts.md, one per alert). */
export function runbookUrl(alert: string, base = SERVED_RUNBOOKS): string {
  return `${base}#${alert.toLowerCase()}`;
}

/** `07:05 UTC` today, `2026-11-20 07:05 UTC` before: short enough for a line, exact on hover. */
export function clock(now: number, at: number): string {
  const text = iso(at);
  const sameDay = text.slice(0, 10) === iso(now).slice(0, 10);
  return `${sameDay ? text.slice(11, 16) : `${text.slice(0, 10)} ${text.slice(11, 16)}`} UTC`;
}

/** `since 07:05 UTC (14m)`, the exact time on hover; nothing when unknown. */
export function sinceText(now: number, at: number | undefined): string {
  if (at === undefined) return '';
  const age = at <= now ? ` (${shortDuration(now - at)})` : ` (${relativeTime(now, at)})`;
  return ` <span class="since">since <time datetime="${iso(at)}" title="${iso(at)}">${clock(now, at)}</time>${age}</span>`;
}

const newBadge = (isNew: boolean) => (isNew ? ' <span class="new" title="appeared since you last looked at this page (on a first look: in the newest poll of its endpoint)">new</span>' : '');

function whatToDo(alert: string, base: string | undefined): string {
  return ` <a class="runbook" href="${escapeHtml(runbookUrl(alert, base))}" title="${escapeHtml(alert)}">what to do</a>`;
}

function lineItem(now: number, l: Line, base: string | undefined): string {
  const title = l.subjectTitle === undefined ? '' : ` title="${escapeHtml(l.subjectTitle)}"`;
  const subject = l.subject === undefined ? '' : ` <code${title}>${escapeHtml(l.subject)}</code>`;
  return `<li class="${l.severity}"><span class="sev">${l.severity}</span>${newBadge(l.isNew)} ${escapeHtml(l.area)}${subject}: ${escapeHtml(l.text)}${sinceText(now, l.since)}${whatToDo(l.alert, base)}</li>`;
}

function causeItem(now: number, c: CauseLine, folded: readonly Line[], base: string | undefined): string {
  const data = c.dataAt === undefined ? ' No data has been polled yet.' : ` The data below is from ${clock(now, c.dataAt)} (${shortDuration(now - c.dataAt)} old).`;
  const explained =
    folded.length === 0
      ? ''
      : `<details><summary>${folded.length} line(s) it explains</summary><ul>${folded.map((l) => lineItem(now, l, base)).join('')}</ul></details>`;
  const until = c.until === undefined ? '' : ` It ends at <time datetime="${iso(c.until)}">${clock(now, c.until)}</time> (${relativeTime(now, c.until)}).`;
  return `<li class="critical cause"><span class="sev">critical</span>${newBadge(c.isNew)} <b class="cause-title">${escapeHtml(c.title)}</b>: ${escapeHtml(c.text)}.${sinceText(now, c.since)}${until}${data}${whatToDo(c.alert, base)}${explained}</li>`;
}

export function anchor(stack: string): string {
  return `stack-${escapeHtml(stack)}`;
}

export function attentionSection(now: number, items: ReadonlyArray<{ stack: LandingStack; view: StackView }>, base: string | undefined): string {
  // Critical stacks first (a stack's cause among them), in configuration order otherwise.
  const rank = (v: StackView) => (v.attention.state === 'critical' ? 0 : 1);
  const troubled = items.filter(({ view }) => view.cause !== undefined || view.lines.length > 0).sort((a, b) => rank(a.view) - rank(b.view));
  const fine = items.length - troubled.length;
  const blocks = troubled.map(({ stack, view }) => {
    const cause = view.cause ? causeItem(now, view.cause, view.folded, base) : '';
    const lines = view.lines.map((l) => lineItem(now, l, base)).join('');
    return `<div class="stack-attention" data-stack="${escapeHtml(stack.name)}"><h3><a href="#${anchor(stack.name)}">${escapeHtml(stack.name)}</a> <span class="state ${view.attention.state}">${view.attention.state}</span></h3><ul>${cause}${lines}</ul></div>`;
  });
  const rest = fine === 0 ? '' : `<p class="okline">${troubled.length === 0 ? 'Nothing needs attention' : `${fine} other stack(s): nothing needs attention`}.</p>`;
  return `<section id="attention"><h2>What needs attention</h2>${blocks.join('\n')}${rest}</section>`;
}
