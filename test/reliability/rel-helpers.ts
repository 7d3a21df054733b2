import { ChildProcess, spawn } from 'node:child_process';
import { createFreshDatabase } from '../helpers/fresh-database';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { contractOrderProblems } from '../helpers/runs';

/**
 * Reliability suite helpers: real `node dist/src/main.js` processes (built once by
 * `npm run test:reliability`), loopback only, every wait bounded.
 */
export const ROOT = resolve(__dirname, '..', '..');
export const MAIN = join(ROOT, 'dist', 'src', 'main.js');
export const KEY = 'rel-member-0001';
export const ADMIN_KEY = 'rel-admin-0001';
export const API_KEYS = `${KEY}:tenant_rel:user_rel:member,${ADMIN_KEY}:tenant_rel:admin_rel:admin`;
export const TERMINAL = ['completed', 'failed', 'cancelled', 'expired', 'terminated'];

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export const script = (turns: unknown[]) => `!script ${JSON.stringify(turns)}`;

/** Polls `fn` until it returns a value other than undefined; throws after `ms`. */
export async function until<T>(what: string, ms: number, fn: () => Promise<T | undefined>, everyMs = 50): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`);
    await sleep(everyMs);
  }
}

export function requireBuild(): void {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run "npm run build" first (npm run test:reliability does)`);
}

export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => res(port));
    });
  });
}

export function tempDir(prefix = 'agent-api-rel-'): { path: string; remove: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** A fresh database on the PostgreSQL server of DATABASE_URL (null when unset: embedded). */
export function freshDatabase(): Promise<{ url: string; drop: () => Promise<void> } | null> {
  return createFreshDatabase('agent_api_rel_');
}

export function requirePostgres(): string {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('this reliability test needs a PostgreSQL server: set DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/postgres)');
  return url;
}

/** Runs SQL against a database URL with a short-lived client. */
export async function sql<T = any>(url: string, text: string, params: unknown[] = []): Promise<T[]> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text, params)).rows as T[];
  } finally {
    await c.end();
  }
}

export interface ApiResult<T = any> {
  status: number;
  headers: Headers;
  body: T;
  ms: number;
}

export interface NodeProcess {
  name: string;
  url: string;
  port: number;
  nodeId: string;
  child: ChildProcess;
  /** stdout + stderr so far (JSON log lines). */
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
  isRunning(): boolean;
  call<T = any>(method: string, path: string, body?: unknown, headers?: Record<string, string>, key?: string | null, timeoutMs?: number): Promise<ApiResult<T>>;
  kill9(): Promise<void>;
  sigterm(): number;
}

export interface StartOptions {
  name: string;
  dataDir: string;
  databaseUrl?: string | null;
  env?: Record<string, string>;
  port?: number;
  bootMs?: number;
}

/** Spawns `node dist/src/main.js` and waits until /healthz answers (bounded). */
export async function startNode(opts: StartOptions): Promise<NodeProcess> {
  requireBuild();
  const port = opts.port ?? (await freePort());
  const nodeId = `${opts.name}-${port}`;
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: opts.dataDir,
    API_KEYS,
    // Closed by default with API_KEYS; the suite's tool servers and webhook receivers are on loopback.
    OUTBOUND_URL_ALLOWLIST: 'http://127.0.0.1:*',
    LOG_LEVEL: 'info',
    NODE_ID: nodeId,
    RUN_LEASE_MS: '2000',
    RATE_LIMIT_PER_MINUTE: '1000000',
    SSE_KEEPALIVE_MS: '1000',
    DOCS_ENABLED: 'false',
    // Every node writing to one database shares the audit chain's key (README: AUDIT_HMAC_KEY).
    AUDIT_HMAC_KEY: 'reliability-suite-audit-key-0000000000000',
    // ... and the key of the webhook secrets (README: WEBHOOK_SECRET_KEY).
    WEBHOOK_SECRET_KEY: 'reliability-suite-webhook-key-00000000000',
    // ... and the key of the tenants' secrets (README: SECRETS_KEY).
    SECRETS_KEY: 'reliability-suite-secrets-key-00000000000',
    // ... and the key that signs the audit checkpoints (README: AUDIT_SIGNING_KEY).
    AUDIT_SIGNING_KEY: 'MC4CAQAwBQYDK2VwBCIEIEDKIZ1/j/v19TiePda3eXpI9LmHPm6bzxgLxyYMYxIa',
    ...(opts.databaseUrl ? { DATABASE_URL: opts.databaseUrl } : {}),
    ...(opts.env ?? {}),
  };
  const child = spawn(process.execPath, [MAIN], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  let running = true;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((res) =>
    child.once('exit', (code, signal) => {
      running = false;
      res({ code, signal, at: Date.now() });
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  const call = async <T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, key: string | null = KEY, timeoutMs = 15000): Promise<ApiResult<T>> => {
    const h: Record<string, string> = { ...headers };
    if (key) h.authorization = `Bearer ${key}`;
    if (body !== undefined) h['content-type'] = 'application/json';
    const started = Date.now();
    const res = await fetch(url + path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs) });
    const text = await res.text();
    let parsed: any;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = text;
    }
    return { status: res.status, headers: res.headers, body: parsed, ms: Date.now() - started };
  };
  const node: NodeProcess = {
    name: opts.name,
    url,
    port,
    nodeId,
    child,
    output: () => out,
    exited,
    isRunning: () => running,
    call: call as NodeProcess['call'],
    kill9: async () => {
      if (running) child.kill('SIGKILL');
      await exited;
    },
    sigterm: () => {
      child.kill('SIGTERM');
      return Date.now();
    },
  };
  const bootMs = opts.bootMs ?? 90_000;
  try {
    await until(`${opts.name} to answer /healthz`, bootMs, async () => {
      if (!running) throw new Error(`exited during start-up:\n${out.slice(-4000)}`);
      const r = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1000) }).catch(() => null);
      return r?.status === 200 ? true : undefined;
    }, 200);
  } catch (err) {
    if (running) child.kill('SIGKILL');
    throw new Error(`${(err as Error).message}\n--- output of ${opts.name} ---\n${out.slice(-4000)}`);
  }
  return node;
}

let idem = 0;
export function idemKey(): string {
  return `rel-${process.pid}-${Date.now().toString(36)}-${++idem}`;
}

export async function createSession(n: NodeProcess, key = KEY): Promise<string> {
  const r = await n.call('POST', '/v1/sessions', {}, {}, key);
  if (r.status !== 201) throw new Error(`session create: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.id;
}

export async function startRun(n: NodeProcess, sessionId: string, text: string, key = KEY, extra: Record<string, unknown> = {}, idempotencyKey = idemKey()) {
  return n.call('POST', `/v1/sessions/${sessionId}/runs`, { input: { role: 'user', content: [{ type: 'text', text }] }, ...extra }, { 'idempotency-key': idempotencyKey }, key);
}

export async function getRun(n: NodeProcess, runId: string, key = KEY): Promise<any> {
  const r = await n.call('GET', `/v1/runs/${runId}`, undefined, {}, key);
  if (r.status !== 200) throw new Error(`get run: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

export async function waitForRunStatus(n: NodeProcess, runId: string, pred: (run: any) => boolean, ms = 60_000, key = KEY): Promise<any> {
  return until(`run ${runId} to reach the wanted status`, ms, async () => {
    const run = await getRun(n, runId, key);
    return pred(run) ? run : undefined;
  }, 100);
}

export async function allEvents(n: NodeProcess, runId: string, key = KEY): Promise<any[]> {
  const out: any[] = [];
  let after = 0;
  for (let page = 0; page < 1000; page++) {
    const r = await n.call('GET', `/v1/runs/${runId}/events?after=${after}&limit=1000`, undefined, {}, key);
    if (r.status !== 200) throw new Error(`events: ${r.status} ${JSON.stringify(r.body)}`);
    out.push(...r.body.data);
    if (!r.body.has_more) return out;
    after = out[out.length - 1].sequence;
  }
  throw new Error('too many event pages');
}

/** The figures every scenario prints and docs/RELIABILITY.md records. */
export class Figures {
  runsAccepted = 0;
  runsFinished = 0;
  eventsChecked = 0;
  duplicates = 0;
  gaps = 0;
  problems: string[] = [];

  constructor(readonly scenario: string) {}

  /** Checks one finished run's stream: gap-free, no duplicate sequence or event id, contract order. */
  checkRun(runId: string, events: any[]): void {
    this.eventsChecked += events.length;
    const seqs = events.map((e) => e.sequence);
    const ids = new Set(events.map((e) => e.event_id));
    this.duplicates += seqs.length - new Set(seqs).size + (events.length - ids.size);
    for (let i = 1; i < seqs.length; i++) if (seqs[i] > seqs[i - 1] + 1) this.gaps += seqs[i] - seqs[i - 1] - 1;
    if (seqs.length && seqs[0] !== 1) this.gaps += seqs[0] - 1;
    for (const p of contractOrderProblems(events)) this.problems.push(`${runId}: ${p}`);
  }

  print(extra: Record<string, unknown> = {}): void {
    const line = {
      scenario: this.scenario,
      database: process.env.DATABASE_URL ? 'postgres' : 'embedded',
      runs_accepted: this.runsAccepted,
      runs_finished: this.runsFinished,
      events_checked: this.eventsChecked,
      duplicates: this.duplicates,
      gaps: this.gaps,
      ...extra,
    };
    process.stdout.write(`RELIABILITY ${JSON.stringify(line)}\n`);
  }
}

export interface SseRecord {
  id: number;
  type: string;
  data: any;
  receivedAt: number;
}

/**
 * A minimal SSE reader (fetch + eventsource-parser) that records every event, the keep-alives and
 * how the stream ended: `clean` (the server finished the body) or `error` (reset / aborted).
 */
export class SseReader {
  readonly events: SseRecord[] = [];
  comments = 0;
  status = 0;
  end: 'open' | 'clean' | 'error' = 'open';
  readonly done: Promise<void>;
  private readonly controller = new AbortController();
  private resolveOpened!: () => void;
  readonly opened = new Promise<void>((r) => (this.resolveOpened = r));

  constructor(url: string, key: string, headers: Record<string, string> = {}) {
    this.done = this.read(url, key, headers);
  }

  private async read(url: string, key: string, headers: Record<string, string>): Promise<void> {
    const { createParser } = await import('eventsource-parser');
    try {
      const res = await fetch(url, { headers: { accept: 'text/event-stream', authorization: `Bearer ${key}`, ...headers }, signal: this.controller.signal });
      this.status = res.status;
      this.resolveOpened();
      if (res.status !== 200 || !res.body) {
        await res.text().catch(() => '');
        this.end = 'clean';
        return;
      }
      const parser = createParser({
        onEvent: (m) => this.events.push({ id: Number(m.id), type: m.event ?? 'message', data: JSON.parse(m.data), receivedAt: Date.now() }),
        onComment: () => this.comments++,
      });
      const decoder = new TextDecoder();
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
      this.end = 'clean';
    } catch {
      this.resolveOpened();
      this.end = 'error';
    }
  }

  async waitFor(what: string, ms: number, pred: (events: SseRecord[]) => boolean): Promise<void> {
    const deadline = Date.now() + ms;
    while (!pred(this.events)) {
      if (this.end !== 'open') throw new Error(`the stream ended (${this.end}) before ${what}`);
      if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
      await sleep(20);
    }
  }

  close(): void {
    this.controller.abort();
  }
}
