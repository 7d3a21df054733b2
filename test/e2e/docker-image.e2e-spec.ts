import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { buildImageLayout, dockerignoreMatcher, ImageLayout, parseDockerfile } from '../helpers/docker-layout';
import { createFreshDatabase } from '../helpers/fresh-database';

const ROOT = resolve(__dirname, '..', '..');
const KEY = 'image-admin-0001';

interface Proc {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** `CMD` of the image, run from its WORKDIR with its ENV (plus `env`), like `docker run` would. */
function runImage(layout: ImageLayout, env: Record<string, string>): Proc {
  const [bin, ...args] = layout.cmd;
  if (bin !== 'node') throw new Error(`CMD starts with ${bin}, not node`);
  const child = spawn(process.execPath, args, {
    cwd: layout.workdir,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...layout.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
  return { child, output: () => out, exited };
}

async function waitForListening(p: Proc, ms = 60_000): Promise<string> {
  const until = Date.now() + ms;
  for (;;) {
    const m = /Agent API listening on (http:\/\/[^\s"]+?) \(/.exec(p.output());
    if (m) return m[1];
    if (p.child.exitCode !== null) throw new Error(`the image's process exited ${p.child.exitCode}:\n${p.output()}`);
    if (Date.now() > until) throw new Error(`not listening after ${ms} ms:\n${p.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const logLines = (p: Proc) =>
  p
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));

describe('Dockerfile helper', () => {
  it('parses continuations and .dockerignore patterns the way Docker does', () => {
    expect(parseDockerfile('# c\nFROM a AS b\nENV X=1 \\\n    Y=2\nRUN x && y\n')).toEqual([
      { op: 'FROM', args: 'a AS b' },
      { op: 'ENV', args: 'X=1      Y=2' },
      { op: 'RUN', args: 'x && y' },
    ]);
    const ignored = dockerignoreMatcher('node_modules\n*.log\ntest\n!test/keep\n');
    expect(['node_modules', 'node_modules/x/y.js', 'a.log', 'test/e2e/x.ts'].map(ignored)).toEqual([true, true, true, true]);
    expect(['src/a.ts', 'src/a.log', 'console/index.html', 'test/keep'].map(ignored)).toEqual([false, false, false, false]);
  });
});

describe('docker-compose.yml and deploy/nginx.conf', () => {
  const compose = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');
  const nginx = readFileSync(join(ROOT, 'deploy/nginx.conf'), 'utf8');

  it('states the app environment once (a YAML anchor), each replica adding only its NODE_ID', () => {
    for (const name of ['DATABASE_URL', 'API_KEYS', 'LOG_LEVEL', 'PORT', 'HOST']) expect(compose.match(new RegExp(`^\\s+${name}:`, 'gm'))).toHaveLength(1);
    expect(compose).toMatch(/^x-app-environment: &app-environment$/m);
    expect(compose.match(/<<: \*app-environment/g)).toHaveLength(2);
  });

  it('publishes on loopback by default (the development key is the fallback) and denies /metrics on the public listener', () => {
    expect(compose).toMatch(/"\$\{AGENT_API_PUBLISH:-127\.0\.0\.1:8080\}:8080"/);
    const publicServer = /server \{\s*listen 8080;[\s\S]*?\n  \}/.exec(nginx)?.[0] ?? '';
    expect(publicServer).toMatch(/location ~ \^\/metrics\/\?\$ \{\s*deny all;\s*\}/);
  });
});

/**
 * The Docker image's file set (built from the Dockerfile without a Docker engine) serves the API,
 * the docs and the web console; it refuses to start without API_KEYS (HOST=0.0.0.0 in the image).
 */
describe('the Docker image (file layout replayed from the Dockerfile)', () => {
  let out: string;
  let layout: ImageLayout;
  let db: Awaited<ReturnType<typeof createFreshDatabase>> = null;
  let proc: Proc | null = null;

  beforeAll(async () => {
    out = mkdtempSync(join(tmpdir(), 'agent-api-image-'));
    layout = buildImageLayout(ROOT, out);
    db = await createFreshDatabase('agent_api_img_');
  }, 120_000);
  afterAll(async () => {
    if (proc && proc.child.exitCode === null) {
      proc.child.kill('SIGTERM');
      await proc.exited;
    }
    await db?.drop();
    rmSync(out, { recursive: true, force: true });
  });

  it('has the console, the agents and the built server in the final stage, on a maintained Node', () => {
    expect(layout.cmd).toEqual(['node', 'dist/src/main.js']);
    expect(layout.baseImage).toMatch(/^node:(22|24)(-|$)/);
    expect(layout.env.HOST).toBe('0.0.0.0');
    expect(layout.skipped.join('\n')).toMatch(/npm prune/);
  });

  it('refuses to start with the image ENV (HOST=0.0.0.0) and no API_KEYS, saying why', async () => {
    const p = runImage(layout, { PORT: '0' });
    const code = await Promise.race([p.exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 20_000))]);
    if (code === 'timeout') p.child.kill('SIGKILL');
    expect(code).toBe(1);
    expect(p.output()).toMatch(/HOST="0\.0\.0\.0": would serve the well-known development key .*set API_KEYS/);
  });

  it('serves /console, /docs and the API with API_KEYS set, starts quietly, and logs runs and error codes', async () => {
    // The image runs with NODE_ENV=production: with DATABASE_URL it needs AUDIT_HMAC_KEY, AUDIT_SIGNING_KEY, WEBHOOK_SECRET_KEY and SECRETS_KEY, as compose passes them.
    const keys = {
      AUDIT_HMAC_KEY: 'docker-image-test-audit-key-0123456789abcdef',
      WEBHOOK_SECRET_KEY: 'docker-image-test-webhook-key-0123456789abcdef',
      SECRETS_KEY: 'docker-image-test-secrets-key-0123456789abcdef',
      AUDIT_SIGNING_KEY: 'MC4CAQAwBQYDK2VwBCIEIGF0hAZKT5Dn/+yZDgR+vuRlLu4oLMHtoFvRIFm+Eero',
    };
    // A configured deployment lists its outbound prefixes (else start-up warns that outbound calls are off).
    const outbound = { OUTBOUND_URL_ALLOWLIST: 'https://tools.example.com/' };
    proc = runImage(layout, { PORT: '0', API_KEYS: `${KEY}:tenant_img:user_img:admin`, ...outbound, ...(db ? { DATABASE_URL: db.url, ...keys } : {}) });
    const url = await waitForListening(proc);
    const startup = logLines(proc);

    const consolePage = await fetch(`${url}/console/`);
    expect(consolePage.status).toBe(200);
    expect(consolePage.headers.get('content-type')).toMatch(/text\/html/);
    expect(await consolePage.text()).toMatch(/<script[^>]+app\.js/);
    for (const asset of ['app.js', 'api.js', 'app.css']) expect((await fetch(`${url}/console/${asset}`)).status).toBe(200);
    expect((await fetch(`${url}/console`, { redirect: 'manual' })).status).toBe(302);
    expect((await fetch(`${url}/docs`)).status).toBe(200);
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    expect(proc.output()).not.toMatch(/must exist/);

    // Start-up at the default level (info): a couple of lines, not Nest's route table.
    expect(startup.length).toBeLessThanOrEqual(3);
    expect(startup.map((l) => l.msg).join('\n')).not.toMatch(/Mapped \{|dependencies initialized|Server listening at/);

    const auth = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
    const missing = await fetch(`${url}/v1/sessions/sess_missing`, { headers: auth });
    expect(missing.status).toBe(404);
    const session: any = await (await fetch(`${url}/v1/sessions`, { method: 'POST', headers: auth, body: '{}' })).json();
    const run = await fetch(`${url}/v1/sessions/${session.id}/runs`, {
      method: 'POST',
      headers: { ...auth, 'idempotency-key': 'image-run-1' },
      body: JSON.stringify({ input: { role: 'user', content: [{ type: 'text', text: 'hello' }] }, mode: 'sync' }),
    });
    expect(run.status).toBe(200);
    const body: any = await run.json();
    expect(body.status).toBe('completed');
    await new Promise((r) => setTimeout(r, 200));

    const lines = logLines(proc);
    // 4xx lines name the error code; run start and end are logged at info with ids, status, reason and duration.
    expect(lines.find((l) => l.msg === 'request completed' && l.status === 404)).toMatchObject({ level: 'warn', code: 'session_not_found', route: '/v1/sessions/:id' });
    expect(lines.find((l) => l.msg === 'run started')).toMatchObject({ level: 'info', run_id: body.id, session_id: session.id, context: 'Runs' });
    const finished = lines.find((l) => l.msg === 'run finished');
    expect(finished).toMatchObject({ level: 'info', run_id: body.id, session_id: session.id, status: 'completed', reason: null });
    expect(typeof finished.duration_ms).toBe('number');
  }, 120_000);
});
