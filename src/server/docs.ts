/**
 * The documentation of the running version (the packaged docs/*.md), rendered to HTML at
 * /docs/<name>: the status page's "what to do" links open docs/alerts.md here unless runbookBaseUrl
 * says otherwise, so they work offline and say what this version does. Headings get GitHub's
 * anchors (#cmdbconnectorerror), so the same links work here and on the repository; a link to
 * another page of docs/ stays on this server, one to anything else goes to the repository.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { Marked, type Tokens } from 'marked';
import { REPOSITORY_URL, VERSION } from '../version.js';
import { escapeHtml } from './html.js';

/** docs/ beside src/ and dist/: this file is src/server/docs.ts or dist/server/docs.js. */
export const DOCS_DIR = new URL('../../docs/', import.meta.url);

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
export function headingAnchor(text: string): string {
  return text.trim().toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-');
}

/** Where a link of a docs page leads when served here: `alerts.md#x` → `alerts#x`; `../README.md` → the repository. */
export function servedHref(href: string): string {
  if (/^[a-z][a-z0-9+.-]*:|^#|^\//i.test(href)) return href;
  const doc = /^(?:\.\/)?([\w-]+)\.md(#.*)?$/.exec(href);
  if (doc) return `${doc[1]}${doc[2] ?? ''}`;
  const outside = href.replace(/^(\.\.\/)+/, '').replace(/^\.\//, '');
  return `${REPOSITORY_URL}/blob/main/${href.startsWith('../') ? outside : `docs/${outside}`}`;
}

/** Markdown with GitHub's heading anchors, and links as served here (servedHref). */
const MARKED = new Marked({
  gfm: true,
  renderer: {
    heading(this: { parser: { parseInline(tokens: Tokens.Heading['tokens']): string } }, token: Tokens.Heading): string {
      return `<h${token.depth} id="${escapeHtml(headingAnchor(token.text))}">${this.parser.parseInline(token.tokens)}</h${token.depth}>\n`;
    },
    link(this: { parser: { parseInline(tokens: Tokens.Link['tokens']): string } }, token: Tokens.Link): string {
      const title = token.title ? ` title="${escapeHtml(token.title)}"` : '';
      return `<a href="${escapeHtml(servedHref(token.href))}"${title}>${this.parser.parseInline(token.tokens)}</a>`;
    },
  },
});

const STYLE = `body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:60rem;padding:0 1rem;color:#1f2328;line-height:1.5}
table{border-collapse:collapse;display:block;overflow-x:auto}th,td{border:1px solid #d0d7de;padding:.3rem .6rem;text-align:left;vertical-align:top}
code{background:#f6f8fa;padding:.1rem .25rem;border-radius:4px;overflow-wrap:anywhere}pre{background:#f6f8fa;padding:.8rem;overflow-x:auto}pre code{padding:0}
h3{margin-top:2rem;border-bottom:1px solid #d0d7de}:target{background:#fff8c5}nav{font-size:.9em;color:#6e7781}`;

/** The pages of docs/, rendered once each on first request. */
export class DocsPages {
  private readonly cache = new Map<string, string>();

  constructor(private readonly dir: URL = DOCS_DIR) {}

  /** The page names (file names without .md); none when docs/ is not installed beside the code. */
  names(): string[] {
    if (!existsSync(this.dir)) return [];
    return readdirSync(this.dir)
      .filter((f) => /^[\w-]+\.md$/.test(f))
      .map((f) => f.slice(0, -3))
      .sort();
  }

  /** The HTML page of docs/<name>.md, or undefined when there is no such page. */
  page(name: string): string | undefined {
    if (!/^[\w-]+$/.test(name) || !this.names().includes(name)) return undefined;
    let html = this.cache.get(name);
    if (html === undefined) {
      const markdown = readFileSync(new URL(`${name}.md`, this.dir), 'utf8');
      const body = MARKED.parse(markdown, { async: false });
      html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(name)} · cmdb-exporter ${escapeHtml(VERSION)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>${STYLE}</style></head><body>
<nav><a href="../">status page</a> · docs/${escapeHtml(name)}.md of cmdb-exporter ${escapeHtml(VERSION)}</nav>
${body}</body></html>
`;
      this.cache.set(name, html);
    }
    return html;
  }
}
