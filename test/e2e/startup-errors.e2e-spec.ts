import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChildResult, ROOT, runNode } from '../helpers/child-process';
import { createFreshDatabase } from '../helpers/fresh-database';

const MAIN = join(ROOT, 'dist', 'src', 'main.js');

/** Runs `node <args>` (the real entry, built) with only `env` and PATH/HOME, until it exits (30 s at most). */
function run(args: string[], env: Record<string, string>): Promise<ChildResult> {
  return runNode(args, { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', PORT: '0', ...env } });
}

/** The lines of a stream's text (a trailing newline ends the last one). */
function lines(text: string): string[] {
  return text.split('\n').filter((l, i, all) => l !== '' || i < all.length - 1);
}

/** Error-level JSON log lines on stdout (Nest's duplicate of the failure was one of them). */
function errorLogLines(stdout: string): string[] {
  return lines(stdout).filter((l) => /"level":"(error|fatal)"/.test(l));
}

describe('start-up failures of the real process: one stderr line, exit 1', () => {
  let dataDir: string;

  beforeAll(() => {
    execFileSync(join(ROOT, 'node_modules', '.bin', 'swc'), ['src', 'migrations', '-d', 'dist', '--copy-files', '--quiet'], { cwd: ROOT, stdio: 'pipe' });
  }, 120_000);

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'agent-api-startup-'));
  });

  afterEach(() => {
    rmSync(dataDir, { recursive: true, force: true });
  });

  it.each([
    ['PORT', { PORT: 'abc' }, 'invalid configuration: PORT="abc": must be a whole number from 0 to 65535'],
    ['PORT', { PORT: '70000' }, 'invalid configuration: PORT="70000": must be a whole number from 0 to 65535'],
    ['LOG_LEVEL', { LOG_LEVEL: 'loud' }, 'invalid configuration: LOG_LEVEL="loud": must be one of fatal, error, warn, info, debug, trace'],
    ['DOCS_ENABLED', { DOCS_ENABLED: 'maybe' }, 'invalid configuration: DOCS_ENABLED="maybe": must be true or false (or 1/0, yes/no, on/off)'],
    ['DATABASE_URL', { DATABASE_URL: 'mysql://app:hunter2@db/app' }, 'invalid configuration: DATABASE_URL="mysql://app:***@db/app": must be a postgres:// or postgresql:// URL (unset: the embedded database in DATA_DIR)'],
    ['AUDIT_HMAC_KEY', { AUDIT_HMAC_KEY: 'hunter2' }, 'invalid configuration: AUDIT_HMAC_KEY=(7 characters, not shown): must be at least 32 characters (e.g. the output of `openssl rand -base64 32`)'],
    ['API_KEYS', { API_KEYS: 'sekret-key-1:tenant_a:user_1:owner' }, 'invalid configuration: API_KEYS=(entry 1 of 1, "***:tenant_a:user_1:owner"): the role must be member or admin, got "owner"'],
  ])('a bad %s (%j) prints exactly one line naming the variable, the value and what is allowed', async (_name, env, line) => {
    const res = await run([MAIN], { DATA_DIR: dataDir, ...env });
    expect(res.code).toBe(1);
    expect(lines(res.stderr)).toEqual([line]);
    // Refused before anything started: no log line at all, and no secret echoed.
    expect(res.stdout).toBe('');
    expect(res.stderr).not.toMatch(/hunter2|sekret-key-1/);
  });

  it('HOST beyond loopback with the development key: one line saying what to set', async () => {
    const res = await run([MAIN], { DATA_DIR: dataDir, HOST: '0.0.0.0' });
    expect(res.code).toBe(1);
    expect(lines(res.stderr)).toEqual([expect.stringMatching(/^invalid configuration: HOST="0\.0\.0\.0": would serve the well-known development key .*set API_KEYS/)]);
  });

  it('two problems: one line each', async () => {
    const res = await run([MAIN], { DATA_DIR: dataDir, PORT: '-1', SSE_MAX_PER_KEY: 'many' });
    expect(res.code).toBe(1);
    expect(lines(res.stderr)).toEqual([
      'invalid configuration: PORT="-1": must be a whole number from 0 to 65535',
      'invalid configuration: SSE_MAX_PER_KEY="many": must be a whole number from 1 to 1000000',
    ]);
  });

  it.each([
    ['MODELS_FILE', (dir: string) => ({ MODELS_FILE: join(dir, 'missing-models.json') }), /^agent-api could not start: MODELS_FILE=".*missing-models\.json": must name a readable JSON array of models: ENOENT/],
    ['AGENTS_DIR', (dir: string) => ({ AGENTS_DIR: join(dir, 'no-agents') }), /^agent-api could not start: AGENTS_DIR=".*no-agents": must be a readable folder of agent definitions \(<id>\.v<version>\.json\): ENOENT/],
    ['AGENT_DEFAULT_ID', () => ({ AGENT_DEFAULT_ID: 'nobody' }), /^agent-api could not start: AGENT_DEFAULT_ID="nobody": must be one of the file agents: .*support_agent/],
  ])('a %s that the app cannot use fails with one line, without Nest\'s stack log', async (_name, env, line) => {
    const res = await run([MAIN], { DATA_DIR: dataDir, ...env(dataDir) });
    expect(res.code).toBe(1);
    expect(lines(res.stderr)).toEqual([expect.stringMatching(line)]);
    expect(res.stderr).not.toMatch(/\n\s+at /);
    expect(errorLogLines(res.stdout)).toEqual([]);
  }, 60_000);

  it('a port in use: one line naming the address and PORT, exit 1, no duplicate error log', async () => {
    const holder: Server = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    const db = await createFreshDatabase('agent_api_startup_');
    try {
      const res = await run([MAIN], { DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', ...(db ? { DATABASE_URL: db.url } : {}) });
      expect(res.code).toBe(1);
      expect(lines(res.stderr)).toEqual([`agent-api could not start: 127.0.0.1:${port} is already in use (PORT=${port}): stop the process that listens there, or set another PORT`]);
      expect(errorLogLines(res.stdout)).toEqual([]);
      // It did get as far as the database (migrations ran): the failure is the listen, after start-up work.
      expect(res.stdout).toMatch(/applied \d+ migration/);
    } finally {
      await new Promise((resolve) => holder.close(resolve));
      await db?.drop();
    }
  }, 90_000);

  it('an unreachable PostgreSQL: one line naming DATABASE_URL without its password', async () => {
    const res = await run([MAIN], { DATA_DIR: dataDir, DATABASE_URL: 'postgres://agent:hunter2@127.0.0.1:9/agent_api' });
    expect(res.code).toBe(1);
    expect(lines(res.stderr)).toEqual([
      'agent-api could not start: cannot connect to the database DATABASE_URL="postgres://agent:***@127.0.0.1:9/agent_api": connect ECONNREFUSED 127.0.0.1:9',
    ]);
  }, 60_000);

  it('a Node.js older than 22.12: one line before anything loads', async () => {
    // The entry as `npm start` runs it, on a process that reports itself as Node 20.
    const res = await run(['-e', `Object.defineProperty(process, 'version', { value: 'v20.20.2' }); require(${JSON.stringify(MAIN)});`], { DATA_DIR: dataDir });
    expect(res.code).toBe(1);
    expect(lines(res.stderr)).toEqual(['agent-api needs Node.js >= 22.12 (this is v20.20.2): install Node 22 or 24 (see .nvmrc) and run it again']);
    expect(res.stdout).toBe('');
  });
});
