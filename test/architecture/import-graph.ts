/**
 * The project's import graph, read with the TypeScript compiler API (resolution as tsc does it:
 * tsconfig's baseUrl, index files), and the cycles in it, between files and between modules.
 *
 * Every import counts, type-only ones (`import type`, `import('x').T`) included: they create no
 * runtime cycle, but they couple two modules just the same, and "no loops" is about coupling.
 */
import * as path from 'node:path';
import * as ts from 'typescript';

export type ImportKind = 'value' | 'type';

/** One import of `from` (a file relative to the root, `/`-separated) to `to` (a file in the graph). */
export interface ImportEdge {
  readonly from: string;
  readonly to: string;
  readonly kind: ImportKind;
}

export interface ImportGraph {
  readonly files: readonly string[];
  readonly edges: readonly ImportEdge[];
}

/** The module a file belongs to: src/modules/<name>, src/common/<name>, migrations; else the file. */
export function moduleOf(file: string): string {
  const m = /^src\/(modules|common)\/([^/]+)\//.exec(file);
  if (m) return `src/${m[1]}/${m[2]}`;
  if (file.startsWith('migrations/')) return 'migrations';
  return file;
}

/**
 * The import graph of the files under `dirs` (relative to `root`), with the compiler options of
 * `root/tsconfig.json`. Imports that resolve outside those files (packages, other folders) are
 * left out: a cycle needs both ends in the graph.
 */
export function readImportGraph(root: string, dirs: readonly string[]): ImportGraph {
  const configPath = path.join(root, 'tsconfig.json');
  const config = ts.readConfigFile(configPath, (p) => ts.sys.readFile(p));
  if (config.error) throw new Error(ts.flattenDiagnosticMessageText(config.error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, root);
  const options = parsed.options;
  const inScope = (abs: string): boolean => {
    const rel = relative(root, abs);
    return !rel.startsWith('..') && dirs.some((d) => rel === d || rel.startsWith(`${d}/`));
  };
  const files = parsed.fileNames.filter((f) => /\.tsx?$/.test(f) && !f.endsWith('.d.ts') && inScope(f));
  const known = new Set(files.map((f) => relative(root, f)));
  const host = ts.createCompilerHost(options);
  const cache = ts.createModuleResolutionCache(root, (s) => s, options);
  const edges: ImportEdge[] = [];
  for (const abs of files) {
    const from = relative(root, abs);
    const text = ts.sys.readFile(abs) ?? '';
    const source = ts.createSourceFile(abs, text, ts.ScriptTarget.Latest, true);
    for (const { specifier, kind } of importsOf(source)) {
      const resolved = ts.resolveModuleName(specifier, abs, options, host, cache).resolvedModule;
      if (!resolved || resolved.isExternalLibraryImport) continue;
      const to = relative(root, resolved.resolvedFileName);
      if (known.has(to)) edges.push({ from, to, kind });
    }
  }
  return { files: [...known].sort(), edges };
}

/** What a source file imports: import/export declarations, `import x = require()`, `import()`, `require()`. */
export function importsOf(source: ts.SourceFile): { specifier: string; kind: ImportKind }[] {
  const found: { specifier: string; kind: ImportKind }[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push({ specifier: node.moduleSpecifier.text, kind: importDeclarationKind(node) });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const typeOnly =
        node.isTypeOnly ||
        (!!node.exportClause && ts.isNamedExports(node.exportClause) && node.exportClause.elements.length > 0 &&
          node.exportClause.elements.every((e) => e.isTypeOnly));
      found.push({ specifier: node.moduleSpecifier.text, kind: typeOnly ? 'type' : 'value' });
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      ts.isStringLiteral(node.moduleReference.expression)
    ) {
      found.push({ specifier: node.moduleReference.expression.text, kind: node.isTypeOnly ? 'type' : 'value' });
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push({ specifier: node.argument.literal.text, kind: 'type' });
    } else if (
      ts.isCallExpression(node) &&
      (node.expression.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(node.expression) && node.expression.text === 'require')) &&
      node.arguments.length === 1 &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      found.push({ specifier: node.arguments[0].text, kind: 'value' });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function importDeclarationKind(node: ts.ImportDeclaration): ImportKind {
  const clause = node.importClause;
  if (!clause) return 'value'; // `import './x'`: for its side effects
  if (clause.isTypeOnly) return 'type';
  if (clause.name) return 'value';
  const bindings = clause.namedBindings;
  if (bindings && ts.isNamedImports(bindings) && bindings.elements.length > 0) {
    return bindings.elements.every((e) => e.isTypeOnly) ? 'type' : 'value';
  }
  return 'value';
}

/** The same graph between modules (`moduleOf`); imports inside a module are left out. */
export function moduleGraph(graph: ImportGraph): ImportGraph {
  const edges = new Map<string, ImportEdge>();
  for (const e of graph.edges) {
    const from = moduleOf(e.from);
    const to = moduleOf(e.to);
    if (from === to) continue;
    const key = `${from}\0${to}`;
    const seen = edges.get(key);
    // One value import makes the module edge a value edge.
    if (!seen || (seen.kind === 'type' && e.kind === 'value')) edges.set(key, { from, to, kind: e.kind });
  }
  return { files: [...new Set(graph.files.map(moduleOf))].sort(), edges: [...edges.values()] };
}

/**
 * Imports against the layering: `src/common/*` imports no module, migrations import nothing
 * from src/ (a migration is a frozen snapshot). On a module graph; as `from -> to`.
 */
export function layerViolations(modules: ImportGraph): string[] {
  return modules.edges
    .filter((e) => (e.from.startsWith('src/common/') && e.to.startsWith('src/modules/')) || (e.from === 'migrations' && e.to.startsWith('src/')))
    .map((e) => `${e.from} -> ${e.to}`)
    .sort();
}

/**
 * The elementary cycles of a graph (Johnson's algorithm), each as its path from its smallest
 * node back to it (`[a, b, a]`), sorted. Stops after `limit` cycles: a tangle that large is
 * reported as it is, not enumerated.
 */
export function findCycles(graph: ImportGraph, limit = 200): string[][] {
  const nodes = [...new Set([...graph.files, ...graph.edges.flatMap((e) => [e.from, e.to])])].sort();
  const index = new Map(nodes.map((n, i) => [n, i]));
  const next: number[][] = nodes.map(() => []);
  for (const e of graph.edges) {
    const a = index.get(e.from)!;
    const b = index.get(e.to)!;
    if (!next[a].includes(b)) next[a].push(b);
  }
  for (const list of next) list.sort((x, y) => x - y);
  const cycles: number[][] = [];
  // Johnson: for each start s (ascending), the cycles through s in the subgraph of nodes >= s.
  for (let s = 0; s < nodes.length && cycles.length < limit; s++) {
    if (!reachesItself(s, next)) continue;
    const blocked = new Set<number>();
    const blockedBy = new Map<number, Set<number>>();
    const stack: number[] = [];
    const unblock = (u: number): void => {
      blocked.delete(u);
      const waiting = blockedBy.get(u);
      if (!waiting) return;
      blockedBy.delete(u);
      for (const w of waiting) if (blocked.has(w)) unblock(w);
    };
    const circuit = (v: number): boolean => {
      let closed = false;
      stack.push(v);
      blocked.add(v);
      for (const w of next[v]) {
        if (w < s || cycles.length >= limit) continue;
        if (w === s) {
          cycles.push([...stack, s]);
          closed = true;
        } else if (!blocked.has(w) && circuit(w)) {
          closed = true;
        }
      }
      if (closed) unblock(v);
      else
        for (const w of next[v]) {
          if (w < s) continue;
          if (!blockedBy.has(w)) blockedBy.set(w, new Set());
          blockedBy.get(w)!.add(v);
        }
      stack.pop();
      return closed;
    };
    circuit(s);
  }
  return cycles.map((c) => c.map((i) => nodes[i]));
}

function reachesItself(s: number, next: number[][]): boolean {
  const seen = new Set<number>();
  const todo = next[s].filter((w) => w >= s);
  while (todo.length > 0) {
    const v = todo.pop()!;
    if (v === s) return true;
    if (seen.has(v)) continue;
    seen.add(v);
    for (const w of next[v]) if (w >= s) todo.push(w);
  }
  return false;
}

/** `a -> b -> a`, the form cycles are listed and compared in. */
export function formatCycle(cycle: readonly string[]): string {
  return cycle.join(' -> ');
}

function relative(root: string, abs: string): string {
  return path.relative(root, abs).split(path.sep).join('/');
}
