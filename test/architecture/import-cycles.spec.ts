import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { findCycles, formatCycle, ImportGraph, layerViolations, moduleGraph, moduleOf, readImportGraph } from './import-graph';

const ROOT = join(__dirname, '..', '..');
/** Every folder tsconfig.json compiles: a file cycle is a loop wherever it is. */
const ALL = ['src', 'migrations', 'test', 'bench', 'clients', 'scripts'];

/**
 * Known file cycles, each exactly as reported (`formatCycle`). Empty is the goal: an entry is a
 * loop someone is removing, and the test fails when it is gone, so that the entry goes too.
 */
const FILE_CYCLE_EXCEPTIONS: string[] = [];
/** Known module cycles (none). */
const MODULE_CYCLE_EXCEPTIONS: string[] = [];

/**
 * The module graph is the production code's (src and migrations without the *.spec.ts files): a
 * unit test may use another module as a fixture (common/http/validation.spec.ts validates real
 * request DTOs) without making its module depend on it.
 */
function productionModules(graph: ImportGraph): ImportGraph {
  const production = (f: string) => (f.startsWith('src/') || f.startsWith('migrations/')) && !f.endsWith('.spec.ts');
  return moduleGraph({ files: graph.files.filter(production), edges: graph.edges.filter((e) => production(e.from) && production(e.to)) });
}

describe('import cycles', () => {
  describe('the checker, on a fixture project', () => {
    let root: string;
    const write = (file: string, text: string) => {
      mkdirSync(dirname(join(root, file)), { recursive: true });
      writeFileSync(join(root, file), text);
    };

    beforeAll(() => {
      root = mkdtempSync(join(tmpdir(), 'import-cycles-'));
      write('tsconfig.json', JSON.stringify({ compilerOptions: { module: 'commonjs', moduleResolution: 'node10', baseUrl: './', strict: true }, include: ['src', 'migrations'] }));
      // A file cycle through a type-only import: a.ts -> b.ts -> a.ts.
      write('src/common/x/a.ts', `import { B } from './b';\nexport class A { b?: B }\n`);
      write('src/common/x/b.ts', `import type { A } from './a';\nexport class B { a?: A }\n`);
      // Modules p and q import each other with no file cycle, once through an index file and a
      // baseUrl path, once through an inline `import('...')` type.
      write('src/modules/p/p.service.ts', `import { Q } from 'src/modules/q';\nexport const P = () => Q;\n`);
      write('src/modules/q/index.ts', `export const Q = 1;\n`);
      write('src/modules/q/q.user.ts', `export let p: typeof import('../p/p.service').P | undefined;\n`);
      // Not a cycle: c.ts imports d.ts (and a package) one way only.
      write('src/common/y/c.ts', `import { D } from './d';\nimport { join } from 'node:path';\nexport const C = [D, join];\n`);
      write('src/common/y/d.ts', `export const D = 2;\n`);
      // Against the layering, without a cycle: a migration importing src/, common importing a module.
      write('migrations/1-m.ts', `import { C } from '../src/common/y/c';\nexport const M = C;\n`);
      write('src/common/z/z.ts', `export { Q } from '../../modules/q';\n`);
    });
    afterAll(() => rmSync(root, { recursive: true, force: true }));

    it('reads imports as tsc resolves them, type-only ones included, packages left out', () => {
      const graph = readImportGraph(root, ['src', 'migrations']);
      expect(graph.edges).toEqual(
        expect.arrayContaining([
          { from: 'src/common/x/a.ts', to: 'src/common/x/b.ts', kind: 'value' },
          { from: 'src/common/x/b.ts', to: 'src/common/x/a.ts', kind: 'type' },
          { from: 'src/modules/p/p.service.ts', to: 'src/modules/q/index.ts', kind: 'value' },
          { from: 'src/modules/q/q.user.ts', to: 'src/modules/p/p.service.ts', kind: 'type' },
          { from: 'migrations/1-m.ts', to: 'src/common/y/c.ts', kind: 'value' },
          { from: 'src/common/z/z.ts', to: 'src/modules/q/index.ts', kind: 'value' },
        ]),
      );
      expect(graph.edges).toHaveLength(7);
    });

    it('finds the file cycle and the module cycles, and nothing else', () => {
      const graph = readImportGraph(root, ['src', 'migrations']);
      expect(findCycles(graph).map(formatCycle)).toEqual(['src/common/x/a.ts -> src/common/x/b.ts -> src/common/x/a.ts']);
      expect(findCycles(moduleGraph(graph)).map(formatCycle)).toEqual(['src/modules/p -> src/modules/q -> src/modules/p']);
      expect(moduleOf('migrations/1-m.ts')).toBe('migrations');
    });

    it('reports imports against the layering', () => {
      expect(layerViolations(moduleGraph(readImportGraph(root, ['src', 'migrations'])))).toEqual([
        'migrations -> src/common/y',
        'src/common/z -> src/modules/q',
      ]);
    });

    it('lists every elementary cycle of a tangle, each from its smallest node', () => {
      const edges = [
        ['a', 'b'],
        ['b', 'c'],
        ['c', 'a'],
        ['c', 'b'],
        ['d', 'd'],
        ['e', 'a'],
      ].map(([from, to]) => ({ from, to, kind: 'value' as const }));
      expect(findCycles({ files: [], edges }).map(formatCycle)).toEqual(['a -> b -> c -> a', 'b -> c -> b', 'd -> d']);
      expect(findCycles({ files: [], edges }, 1)).toHaveLength(1);
    });
  });

  describe('this repository', () => {
    let graph: ImportGraph;
    beforeAll(() => {
      graph = readImportGraph(ROOT, ALL);
    });

    it('reads the whole project', () => {
      // A broken reader (nothing resolved) would find no cycles: make sure it sees the code.
      expect(graph.files.length).toBeGreaterThan(300);
      expect(graph.edges).toEqual(expect.arrayContaining([{ from: 'src/app.module.ts', to: 'src/modules/runs/runs.module.ts', kind: 'value' }]));
    });

    it('has no import cycle between files (but the listed exceptions)', () => {
      expect(findCycles(graph).map(formatCycle)).toEqual(FILE_CYCLE_EXCEPTIONS);
    });

    it('has no import cycle between modules (src/modules/<name>, src/common/<name>, migrations)', () => {
      expect(findCycles(productionModules(graph)).map(formatCycle)).toEqual(MODULE_CYCLE_EXCEPTIONS);
    });

    it('common/ imports no module; migrations import nothing from src/', () => {
      expect(layerViolations(productionModules(graph))).toEqual([]);
    });
  });
});
