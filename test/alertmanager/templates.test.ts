/**
 * Golden tests of the notification templates (config/alertmanager/cmdb.tmpl) as Alertmanager
 * renders them: `amtool template render` with the shipped templates and the notifications in
 * data/*.json (one problem each: an unreachable CMDB firing and resolved, a connector failing on
 * three profiles whose name needs escaping, endpoints of one stack, the exporter down; the summaries
 * are the rules' static ones, each alert named by its labels). Each golden
 * file in golden/ holds every template's output for one notification. After an intended change:
 * `UPDATE_GOLDEN=1 npx vitest run test/alertmanager/templates.test.ts` and review the diff.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { TEMPLATES_FILE } from '../../scripts/gen-alertmanager.js';
import { alertObject } from '../../scripts/rules/problems.js';
import { describeNotification, type Notification } from '../../scripts/alert-receiver.js';
import { requirePart } from '../e2e/harness/tools.js';
import { REPO } from '../dashboards/metrics.js';

const run = promisify(execFile);
const DATA = new URL('./data/', import.meta.url);
const GOLDEN = new URL('./golden/', import.meta.url);
const TEMPLATES = new URL(TEMPLATES_FILE, REPO).pathname;

/** Every template a receiver of the shipped configuration uses, and how Alertmanager renders it. */
const RENDERED: ReadonlyArray<readonly [name: string, type: 'text' | 'html']> = [
  ['cmdb.slack.title', 'text'],
  ['cmdb.slack.color', 'text'],
  ['cmdb.slack.text', 'text'],
  ['cmdb.dashboard', 'text'],
  ['cmdb.email.subject', 'text'],
  ['cmdb.email.text', 'text'],
  ['cmdb.email.html', 'html'],
  ['cmdb.teams.card', 'text'],
  // What the Teams bridge (prometheus-msteams) renders.
  ['teams.card', 'text'],
];

async function render(template: string, type: 'text' | 'html', data: string): Promise<string> {
  const { stdout } = await run(
    requirePart('amtool'),
    ['template', 'render', `--template.glob=${TEMPLATES}`, `--template.type=${type}`, `--template.data=${data}`, `--template.text={{ template "${template}" . }}`],
    { timeout: 20_000 },
  );
  return stdout;
}

const fixtures = readdirSync(DATA).filter((f) => f.endsWith('.json')).sort();

describe('notification templates, rendered by amtool', () => {
  it('have a notification to render for each kind of problem', () => {
    expect(fixtures).toEqual(['connector-error.json', 'endpoints-mixed.json', 'exporter-down.json', 'unreachable-firing.json', 'unreachable-resolved.json']);
  });

  it.each(fixtures.map((f) => [f]))('%s renders as the golden file says', async (fixture) => {
    const data = new URL(fixture, DATA).pathname;
    const parts: string[] = [];
    for (const [name, type] of RENDERED) parts.push(`===== ${name} (${type})\n${await render(name, type, data)}\n`);
    const text = parts.join('');
    const golden = new URL(fixture.replace(/\.json$/, '.txt'), GOLDEN);
    if (process.env.UPDATE_GOLDEN === '1') writeFileSync(golden, text);
    expect(existsSync(golden), `${golden.pathname} is missing: run with UPDATE_GOLDEN=1`).toBe(true);
    expect(text).toBe(readFileSync(golden, 'utf8'));
  });

  it.each(fixtures.map((f) => [f]))('%s: the Teams card is one JSON message holding an Adaptive Card that says it all', async (fixture) => {
    const input = JSON.parse(readFileSync(new URL(fixture, DATA), 'utf8')) as { status: string; alerts: Array<{ labels: Record<string, string>; annotations: { summary: string; runbook_url: string } }> };
    const message = JSON.parse(await render('cmdb.teams.card', 'text', new URL(fixture, DATA).pathname)) as {
      type: string;
      attachments: Array<{ contentType: string; content: { type: string; version: string; body: Array<{ type: string; text?: string; facts?: Array<{ title: string; value: string }> }>; actions: Array<{ title: string; url: string }> } }>;
    };
    expect(message.type).toBe('message');
    const card = message.attachments[0]?.content;
    expect(message.attachments[0]?.contentType).toBe('application/vnd.microsoft.card.adaptive');
    expect(card?.type).toBe('AdaptiveCard');
    const facts = Object.fromEntries((card?.body.find((b) => b.type === 'FactSet')?.facts ?? []).map((f) => [f.title, f.value]));
    expect(Object.keys(facts)).toEqual(expect.arrayContaining(['What broke', 'Since', 'Affected']));
    expect(facts.Since).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
    const text = card?.body.map((b) => b.text ?? '').join('\n') ?? '';
    // Every alert by its object (from its labels, quotes and markup included) and its summary.
    for (const a of input.alerts) expect(text).toContain(`${alertObject(a.labels)}: ${a.annotations.summary}`);
    expect(card?.actions.map((a) => a.title)).toEqual(['Runbook', 'Dashboard']);
    expect(card?.actions[0]?.url).toBe(input.alerts[0]?.annotations.runbook_url);
    expect(card?.actions[1]?.url).toMatch(/^http:\/\/localhost:3000\/d\/cmdb-/);
  });

  it.each(fixtures.map((f) => [f]))("%s: the demo prints each alert as the templates list it (its object, then its summary)", (fixture) => {
    const input = JSON.parse(readFileSync(new URL(fixture, DATA), 'utf8')) as Omit<Notification, 'at'>;
    const printed = describeNotification({ ...input, at: 0 }).split('\n');
    for (const a of input.alerts) {
      const line = `    ${a.status === 'resolved' ? 'resolved: ' : ''}${a.labels.alertname ?? ''} on ${alertObject(a.labels)}: ${a.annotations.summary ?? ''}`;
      expect(printed).toContain(line);
    }
  });

  it('escape a connector name for Slack and e-mail, and link its connector dashboard', async () => {
    const data = new URL('connector-error.json', DATA).pathname;
    expect(await render('cmdb.slack.text', 'text', data)).toContain('• connector erp "legacy" &lt;&amp;&gt; (profile prod): CMDB connector run failed.');
    expect(await render('cmdb.email.html', 'html', data)).toContain('connector erp &#34;legacy&#34; &lt;&amp;&gt;');
    expect(await render('cmdb.dashboard', 'text', data)).toBe('http://localhost:3000/d/cmdb-connector-detail?var-stack=prod&var-connector=erp+%22legacy%22+%3C%26%3E');
  });
});
