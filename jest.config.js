/** Jest projects: unit (co-located *.spec.ts), integration and e2e (real database, real port). */
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true, dynamicImport: true },
      transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
      target: 'es2022',
      keepClassNames: true,
    },
    module: { type: 'commonjs' },
    sourceMaps: 'inline',
    swcrc: false,
  },
];
// NestJS 12 and several of its dependencies ship ESM only. Node (>= 22.12) loads those with
// require(esm) at run time, but Jest's module loader does not: every package that declares
// "type": "module" is therefore compiled to CommonJS by swc (found by scanning node_modules once).
const fs = require('node:fs');
const path = require('node:path');
function esmPackages(root) {
  const found = new Set();
  const visit = (dir, depth) => {
    let entries = [];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (!e.isDirectory() || e.name.startsWith('.')) continue;
      const full = path.join(dir, e.name);
      if (e.name.startsWith('@')) {
        visit(full, depth);
        continue;
      }
      try {
        const pkg = JSON.parse(fs.readFileSync(path.join(full, 'package.json'), 'utf8'));
        if (pkg.type === 'module') found.add(path.relative(root, full).split(path.sep).join('/'));
      } catch {
        /* not a package */
      }
      if (depth < 2) visit(path.join(full, 'node_modules'), depth + 1);
    }
  };
  visit(root, 0);
  return [...found].map((n) => n.replace(/^.*node_modules\//, ''));
}
const esm = [...new Set(esmPackages(path.join(__dirname, 'node_modules')))].map((n) => n.replace(/[.+]/g, '\\$&'));
const common = {
  transform: { '^.+\\.(t|j|mj)sx?$': swc },
  transformIgnorePatterns: [`/node_modules/(?!(${esm.join('|')})/)`],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  testEnvironment: 'node',
  // The build copies clients/ts/package.json into dist/: not a second module for Jest's map.
  modulePathIgnorePatterns: ['<rootDir>/dist/'],
  // TEST_OPEN_HANDLES=1: each test file reports the timers and sockets it left running (test/helpers/open-handles-setup.ts).
  ...(process.env.TEST_OPEN_HANDLES === '1' ? { setupFilesAfterEnv: ['<rootDir>/test/helpers/open-handles-setup.ts'] } : {}),
};
module.exports = {
  // Hooks start real apps (PGlite, migrations): 60 s leaves room on a loaded 2-core machine; a hang still fails.
  testTimeout: 60000,
  projects: [
    // test/architecture: the import-cycle check over the whole project (docs/ARCHITECTURE.md, Dependencies).
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/clients/**/*.spec.ts', '<rootDir>/test/architecture/**/*.spec.ts'] },
    { ...common, displayName: 'integration', testMatch: ['<rootDir>/test/integration/**/*.int-spec.ts'] },
    { ...common, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.e2e-spec.ts'] },
    // Real processes (dist/src/main.js): not part of `npm test`. `npm run test:reliability` builds and
    // runs it (RELIABILITY=1 turns the project on).
    ...(process.env.RELIABILITY === '1'
      ? [{ ...common, displayName: 'reliability', testMatch: ['<rootDir>/test/reliability/**/*.rel-spec.ts'] }]
      : []),
    // Browser tests (Chromium via playwright-core): not part of `npm test`. `npm run test:browser`
    // runs them (BROWSER_TESTS=1 turns the project on).
    ...(process.env.BROWSER_TESTS === '1'
      ? [{ ...common, displayName: 'browser', testMatch: ['<rootDir>/test/browser/**/*.browser-spec.ts'] }]
      : []),
  ],
};
