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
// NestJS 12 and a few dependencies ship ESM only; Node >= 20.19 loads them with require(esm),
// but Jest's module loader does not, so they are compiled to CommonJS with swc as well.
const esmPackages = ['@nestjs', 'ulid', 'file-type', 'strtok3', 'token-types', 'peek-readable', '@tokenizer', 'uint8array-extras', 'fast-check', 'pure-rand'];
const common = {
  transform: { '^.+\\.(t|j|mj)sx?$': swc },
  transformIgnorePatterns: [`/node_modules/(?!(${esmPackages.join('|')})/)`],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'json'],
  testEnvironment: 'node',
};
module.exports = {
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/src/**/*.spec.ts'] },
    { ...common, displayName: 'integration', testMatch: ['<rootDir>/test/integration/**/*.int-spec.ts'] },
    { ...common, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.e2e-spec.ts'] },
  ],
};
