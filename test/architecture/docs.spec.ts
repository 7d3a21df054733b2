import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { loadConfig } from '../../src/common/config/app-config';
import { MIGRATIONS } from '../../migrations';
import { brokenLinks, headingAnchors, linkTargets } from './markdown-links';

const ROOT = join(__dirname, '..', '..');
/** README.md and every page of docs/ (not docs/_pending/, the notes waiting to be folded in). */
const DOCS = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

/**
 * The environment variables the configuration module reads, found by running it: `loadConfig`
 * over an environment that records every name asked for (every one is read whether it is set or
 * not), plus the names its source reads by literal (`env.X`, `env['X']`, `int('X', ...)`), so a
 * variable read only in some branch is not missed.
 */
function configVariables(): Set<string> {
  const asked = new Set<string>();
  const env = new Proxy({} as NodeJS.ProcessEnv, {
    get: (_t, name) => {
      if (typeof name === 'string') asked.add(name);
      return undefined;
    },
  });
  loadConfig(env);
  const dir = join(ROOT, 'src', 'common', 'config');
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.ts') && !n.endsWith('.spec.ts'))) {
    const text = readFileSync(join(dir, f), 'utf8');
    for (const m of text.matchAll(/\benv(?:\.|\[['"])([A-Z][A-Z0-9_]+)|\b(?:str|int|bool|secretKey)\(\s*['"]([A-Z][A-Z0-9_]+)['"]/g)) asked.add(m[1] ?? m[2]);
  }
  return asked;
}

/** The first column of the configuration table of docs/configuration.md. */
function tableVariables(): string[] {
  const text = read('docs/configuration.md');
  const table = text.slice(text.indexOf('| Variable |'));
  const rows = table.slice(0, table.search(/\n(?!\|)/)).split('\n').slice(2);
  return rows.map((r) => /^\| `([A-Z][A-Z0-9_]*)` \|/.exec(r)?.[1] ?? `unparsed row: ${r.slice(0, 40)}`);
}

describe('documentation', () => {
  describe('the link checker, on a fixture', () => {
    let root: string;
    const write = (file: string, text: string) => {
      mkdirSync(dirname(join(root, file)), { recursive: true });
      writeFileSync(join(root, file), text);
    };
    beforeAll(() => {
      root = mkdtempSync(join(tmpdir(), 'docs-links-'));
      write('README.md', [
        '# Title',
        'See [the page](docs/page.md#a-heading-with-code-and-links), [again](docs/page.md#repeated-1),',
        '[wrapped',
        'text](docs/page.md#missing), [gone](docs/gone.md), [up](../outside.md), [web](https://example.com/x#y),',
        '[self](#title), [code](docs/page.md#not-a-heading), `[span](nowhere.md)`',
        '```bash',
        '# not-a-heading',
        '[in code](nowhere.md)',
        '```',
      ].join('\n'));
      write('docs/page.md', "## A heading with `code` and [links](../README.md)!\n## Repeated\n## Repeated\n<a id=\"custom\"></a>\n[ok](../README.md#title) [html](#custom) [folder](.)\n");
    });
    afterAll(() => rmSync(root, { recursive: true, force: true }));

    it("computes GitHub's anchors: rendered text, punctuation dropped, repeats numbered, code blocks skipped", () => {
      expect([...headingAnchors(readFileSync(join(root, 'docs/page.md'), 'utf8'))]).toEqual(['a-heading-with-code-and-links', 'repeated', 'repeated-1', 'custom']);
      expect(headingAnchors('## Quick start (5 minutes)\n## AG-UI 1.0\n## What differs from OpenAI\'s service\n## The examples in agents/').has('ag-ui-10')).toBe(true);
      expect([...headingAnchors('## Quick start (5 minutes)\n## What differs from OpenAI\'s service\n## The examples in agents/')]).toEqual([
        'quick-start-5-minutes',
        'what-differs-from-openais-service',
        'the-examples-in-agents',
      ]);
    });

    it('finds the links of the prose (wrapped ones too), not those in code', () => {
      expect(linkTargets(readFileSync(join(root, 'README.md'), 'utf8')).map((l) => `${l.line} ${l.target}`)).toEqual([
        '2 docs/page.md#a-heading-with-code-and-links',
        '2 docs/page.md#repeated-1',
        '3 docs/page.md#missing',
        '4 docs/gone.md',
        '4 ../outside.md',
        '4 https://example.com/x#y',
        '5 #title',
        '5 docs/page.md#not-a-heading',
      ]);
    });

    it('reports a missing file, a missing anchor and a target outside the repository, and nothing else', () => {
      expect(brokenLinks(root, ['README.md', 'docs/page.md']).map((b) => `${b.file}:${b.line} ${b.target}: ${b.reason}`)).toEqual([
        'README.md:3 docs/page.md#missing: no heading of docs/page.md has the anchor #missing',
        'README.md:4 docs/gone.md: docs/gone.md does not exist',
        'README.md:4 ../outside.md: outside the repository',
        'README.md:5 docs/page.md#not-a-heading: no heading of docs/page.md has the anchor #not-a-heading',
      ]);
    });
  });

  it('every relative link and anchor of README.md and docs/*.md resolves', () => {
    expect(DOCS.length).toBeGreaterThan(10);
    expect(brokenLinks(ROOT, DOCS).map((b) => `${b.file}:${b.line} ${b.target}: ${b.reason}`)).toEqual([]);
  });

  it('no page and no console text cites a document outside the repository', () => {
    const console = readdirSync(join(ROOT, 'console')).filter((f) => /\.(js|html|css)$/.test(f)).map((f) => `console/${f}`);
    const agents = readdirSync(join(ROOT, 'agents')).filter((f) => f.endsWith('.json')).map((f) => `agents/${f}`);
    const citing = [...DOCS, ...console, ...agents].filter((f) => /\bCONTRACT\b|DESIGN\.md|\/work\//.test(read(f)));
    expect(citing).toEqual([]);
  });

  it('the configuration table lists exactly the variables the configuration module reads', () => {
    const read = configVariables();
    expect(read.size).toBeGreaterThan(50);
    const table = tableVariables();
    expect(table.filter((v, i) => table.indexOf(v) !== i)).toEqual([]);
    expect({ missingFromTable: [...read].filter((v) => !table.includes(v)).sort(), notRead: table.filter((v) => !read.has(v)).sort() }).toEqual({
      missingFromTable: [],
      notRead: [],
    });
  });

  it("the README's start-up line names the real number of migrations", () => {
    const m = /applied (\d+) migration\(s\): (\w+), \.\.\./.exec(read('README.md'));
    expect(m).not.toBeNull();
    expect({ count: Number(m![1]), first: m![2] }).toEqual({ count: MIGRATIONS.length, first: MIGRATIONS[0].name });
  });
});
