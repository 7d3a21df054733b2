import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

const run = promisify(execFile);
const ROOT = resolve(__dirname, '..', '..');
const CLIENT_DIR = join(ROOT, 'clients', 'ts');

/**
 * clients/ts as a package: `npm pack` builds and packs it, the tarball installs into an empty
 * project, and both `require` and `import` load it; the README's example, taken from the README
 * as is (only the server URL and key replaced), type-checks with `tsc --strict` against the
 * installed package and runs against a real server.
 */
describe('the typed client package (clients/ts)', () => {
  let t: TestApp;
  let work: string;
  let app: string;

  beforeAll(async () => {
    t = await startTestApp();
    work = mkdtempSync(join(tmpdir(), 'agent-api-client-pack-'));
    app = join(work, 'app');
    await run('npm', ['pack', '--pack-destination', work], { cwd: CLIENT_DIR, timeout: 120_000 });
    const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'));
    if (!tarball) throw new Error(`npm pack wrote no tarball into ${work}`);
    await run('mkdir', ['-p', app]);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }));
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', join(work, tarball)], { cwd: app, timeout: 120_000 });
  }, 240_000);

  afterAll(async () => {
    await t?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('ships dist (JS and types), openapi.json and its README, and no sources or tests', () => {
    const pkgDir = join(app, 'node_modules', '@agent-api', 'client');
    const files = readdirSync(pkgDir).sort();
    expect(files).toEqual(expect.arrayContaining(['README.md', 'dist', 'openapi.json', 'package.json']));
    expect(files).not.toContain('src');
    const dist = readdirSync(join(pkgDir, 'dist'));
    expect(dist).toEqual(expect.arrayContaining(['index.js', 'index.d.ts', 'client.js', 'sse.js', 'schema.d.ts']));
    expect(dist.filter((f) => f.includes('spec'))).toEqual([]);
  });

  it('loads with require and with import', async () => {
    const cjs = await run('node', ['-e', "const c = require('@agent-api/client'); console.log(typeof c.AgentApiClient, typeof c.streamRunEvents, typeof c.ApiError)"], { cwd: app });
    expect(cjs.stdout.trim()).toBe('function function function');
    const esm = await run('node', ['--input-type=module', '-e', "import { AgentApiClient, streamRunEvents, retryDelay } from '@agent-api/client'; console.log(typeof AgentApiClient, typeof streamRunEvents, typeof retryDelay)"], { cwd: app });
    expect(esm.stdout.trim()).toBe('function function function');
  });

  it("the README's example type-checks with tsc --strict and runs against the server", async () => {
    const readme = readFileSync(join(CLIENT_DIR, 'README.md'), 'utf8');
    const block = /```ts\n([\s\S]*?)```/.exec(readme);
    expect(block).not.toBeNull();
    const example = block![1].replace('http://127.0.0.1:3000', t.url).replace("'dev-key-0001'", `'${KEYS.adminA}'`);
    expect(example).toContain(t.url);
    writeFileSync(join(app, 'example.mts'), example);
    await run(
      join(ROOT, 'node_modules', '.bin', 'tsc'),
      ['--strict', '--noEmit', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--types', 'node', '--typeRoots', join(ROOT, 'node_modules', '@types'), 'example.mts'],
      { cwd: app },
    ).catch((err: { stdout?: string }) => {
      throw new Error(`tsc --strict failed on the README example:\n${err.stdout ?? String(err)}`);
    });
    // The example has no type annotations: as .mjs it runs as is.
    writeFileSync(join(app, 'example.mjs'), example);
    const out = await run('node', ['example.mjs'], { cwd: app, timeout: 60_000 });
    expect(out.stdout).toMatch(/T-[0-9A-Z]+/);
    expect(out.stdout).toMatch(/\ncompleted /);
    expect(out.stdout).toContain('no such session');
  }, 120_000);
});
