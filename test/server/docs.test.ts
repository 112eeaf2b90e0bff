/**
 * The runbooks the exporter serves itself (src/server/docs.ts): docs/*.md of the running version,
 * rendered at /docs/<name>. Every shipped alert's section is there under the anchor the status page
 * and the rules link to; links to other docs stay on the server; nothing outside docs/ is served.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alertGroups } from '../../scripts/gen-rules.js';
import type { App } from '../../src/app.js';
import { DocsPages, headingAnchor, servedHref } from '../../src/server/docs.js';
import { runbookUrl } from '../../src/server/attention-html.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { configFor, stackFor, startExporter } from '../helpers/exporter.js';

const empty = mkdtempSync(join(tmpdir(), 'cmdb-no-docs-'));
let sim: SimulatorServer;
let app: App;

beforeAll(async () => {
  sim = await startSimulator({ seed: 3 });
  ({ app } = await startExporter(configFor([stackFor(sim, { name: 'docs' })]), { serve: true, schedule: false }));
});

afterAll(async () => {
  await app?.close(0);
  await sim?.close();
  rmSync(empty, { recursive: true, force: true });
});

describe('the served docs', () => {
  const pages = new DocsPages();

  it('render docs/alerts.md with a section at the anchor of every shipped alert', () => {
    const html = pages.page('alerts') ?? '';
    for (const a of alertGroups().flatMap((g) => g.rules)) {
      const anchor = runbookUrl(a.alert).split('#')[1];
      expect(html, a.alert).toContain(`<h3 id="${anchor}">${a.alert}</h3>`);
    }
    expect(html).toContain('<table>');
    expect(html).toContain('<pre><code class="language-sh">');
  });

  it('keep links to other docs on this server and send the rest to the repository', () => {
    expect(servedHref('alertmanager.md#the-mixin-settings')).toBe('alertmanager#the-mixin-settings');
    expect(servedHref('#cmdbexporterdown')).toBe('#cmdbexporterdown');
    expect(servedHref('https://example.com/x')).toBe('https://example.com/x');
    expect(servedHref('../README.md#deploy')).toBe('https://github.com/cmdb-exporter/cmdb-exporter/blob/main/README.md#deploy');
    expect(headingAnchor('Job, stacks and runbook links: the mixin settings')).toBe('job-stacks-and-runbook-links-the-mixin-settings');
    expect(pages.page('alerts')).toContain('<a href="alertmanager">alertmanager.md</a>');
  });

  it('serve only the pages of docs/, and none when docs/ is not installed', () => {
    expect(pages.names()).toContain('alerts');
    for (const name of ['../README', 'alerts.md', '', 'nope']) expect(pages.page(name), name).toBeUndefined();
    expect(new DocsPages(pathToFileURL(`${empty}/`)).names()).toEqual([]);
  });

  it('over HTTP: 200 HTML for a page, 404 naming the pages for anything else', async () => {
    const ok = await fetch(`${app.url}/docs/alerts`);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await ok.text()).toContain('<h3 id="cmdbunreachable">CmdbUnreachable</h3>');
    const missing = await fetch(`${app.url}/docs/secrets`);
    expect(missing.status).toBe(404);
    expect(await missing.text()).toContain('alerts');
    expect((await fetch(`${app.url}/docs/..%2Fpackage.json`)).status).toBe(404);
  });
});
