/**
 * The benchmark runner (issue 7): `npm run bench [-- --only B1,B4 --db postgres|embedded|both --quick --profile --env K=V]`.
 *
 * For each database it starts the service as a child process (`node dist/src/main.js`; PostgreSQL:
 * a fresh database created and dropped here; embedded: a temp DATA_DIR), runs B1-B5 against it
 * over loopback, and computes the ratios against the targets and the bare-Fastify ceiling in the
 * same run. Results: a table on stdout and bench/results/latest.json (merged per db and bench).
 * `--profile` starts the server with `--cpu-prof` (profiles in bench/profiles/, see bench/profile-top.ts);
 * `--server <main.js>` benchmarks another build (A/B); `--env K=V` adds server environment.
 * `--webhook`: one webhook endpoint of the bench tenant, subscribed to every event type, with a
 * verifying receiver on loopback in this process (B1 A/B with webhooks on). B6, B7 and B8 are not in
 * the default set (`--only B6`, `--only B7`, `--only B8`). `--model openai_compatible`: B1/B1W's runs call an OpenAI-compatible
 * fake server on loopback in this process (a tool call, then B1's 50-chunk answer) through the AI
 * SDK instead of the scripted model (`MODELS_FILE` written here). `--metrics`: the server's /metrics
 * text after each benchmark, saved under bench/results/ (pool waits, deadlock retries, latencies).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api } from './lib/api';
import { DIST, freshDatabase, listeningPorts, startProcess } from './lib/server';
import { freePort, load1, log } from './lib/util';
import { BenchReceiver } from './lib/webhook-receiver';
import { answer, b1, b1w, b2, b3, b4, b5, BenchResult, Ctx } from './scenarios';
import { startFakeOpenAi } from './lib/fake-openai-server';
import { b6, subscribe } from './webhooks';
import { b8 } from './timers';
import { b7 } from './subagents';

const BENCHES = { B1: b1, B1W: b1w, B2: b2, B3: b3, B4: b4, B5: b5, B6: b6, B7: b7, B8: b8 } as const;
type BenchName = keyof typeof BENCHES;

const KEY = 'bench-admin-key-0001';
const PG_BASE = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const ROOT = join(DIST, '..');

interface Args {
  only: BenchName[];
  dbs: Array<'postgres' | 'embedded'>;
  quick: boolean;
  profile: boolean;
  env: Record<string, string>;
  /** The server entry point (default dist/src/main.js); another build for A/B comparisons. */
  server: string;
  /** One webhook endpoint subscribed to every event, with a receiver in this process. */
  webhook: boolean;
  /** `openai_compatible`: runs call a fake OpenAI-compatible server (the AI SDK path); else the scripted model. */
  model: 'scripted' | 'openai_compatible';
  /** Save the server's /metrics after each benchmark (bench/results/metrics-<db>-<bench>-<time>.txt). */
  metrics: boolean;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { only: ['B1', 'B2', 'B3', 'B4', 'B5'], dbs: ['postgres', 'embedded'], quick: false, profile: false, env: {}, server: join(DIST, 'src', 'main.js'), webhook: false, model: 'scripted', metrics: false };
  for (let i = 0; i < argv.length; i++) {
    const v = argv[i];
    if (v === '--only') a.only = argv[++i].split(',').map((s) => s.trim().toUpperCase()) as BenchName[];
    else if (v === '--db') a.dbs = argv[++i] === 'both' ? ['postgres', 'embedded'] : [argv[i] as 'postgres' | 'embedded'];
    else if (v === '--quick') a.quick = true;
    else if (v === '--profile') a.profile = true;
    else if (v === '--webhook') a.webhook = true;
    else if (v === '--metrics') a.metrics = true;
    else if (v === '--server') a.server = argv[++i];
    else if (v === '--model') {
      const m = argv[++i];
      if (m !== 'scripted' && m !== 'openai_compatible') throw new Error(`--model is scripted or openai_compatible, not ${m}`);
      a.model = m;
    }
    else if (v === '--env') {
      const [k, ...rest] = argv[++i].split('=');
      a.env[k] = rest.join('=');
    } else throw new Error(`unknown argument ${v}`);
  }
  for (const b of a.only) if (!(b in BENCHES)) throw new Error(`unknown bench ${b}`);
  return a;
}

async function runFor(db: 'postgres' | 'embedded', args: Args): Promise<BenchResult[]> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-api-bench-'));
  const pg = db === 'postgres' ? await freshDatabase(PG_BASE) : null;
  const fake = args.model === 'openai_compatible' ? await startFakeOpenAi(answer(200)) : null;
  const modelsFile = join(dataDir, 'models.json');
  if (fake) {
    writeFileSync(
      modelsFile,
      JSON.stringify([
        { id: 'scripted', provider: 'scripted', model: 'scripted', price: { input_per_mtok: 1, output_per_mtok: 2, cached_input_per_mtok: 0.5 } },
        { id: 'bench-compat', provider: 'openai_compatible', model: 'bench', base_url: fake.baseUrl, price: { input_per_mtok: 1, output_per_mtok: 2 } },
      ]),
    );
  }
  const env: Record<string, string> = {
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '10000000',
    API_KEYS: `${KEY}:tenant_bench:user_bench:admin`,
    // Closed by default with API_KEYS; the webhook receiver (--webhook, B6) is on loopback.
    OUTBOUND_URL_ALLOWLIST: 'http://127.0.0.1:*',
    // B3 opens 1,000 streams with one key (the default limit is 100 per key).
    SSE_MAX_PER_KEY: '5000',
    DATA_DIR: dataDir,
    ...(pg ? { DATABASE_URL: pg.url } : {}),
    ...(fake ? { MODELS_FILE: modelsFile } : {}),
    ...args.env,
  };
  const nodeArgs = (bench: string): string[] => {
    if (!args.profile) return [];
    const dir = join(ROOT, 'bench', 'profiles');
    mkdirSync(dir, { recursive: true });
    return ['--cpu-prof', '--cpu-prof-dir', dir, '--cpu-prof-name', `${db}-${bench}-${Date.now()}.cpuprofile`];
  };
  const results: BenchResult[] = [];
  const receiver = args.webhook ? await new BenchReceiver().start() : null;
  try {
    // A fresh service process per benchmark: one benchmark's heap (and its garbage) does not
    // distort the next one's RSS or GC pauses. The database is kept.
    for (const name of args.only) {
      const app = await startProcess(`service (${db})`, [...nodeArgs(name), args.server], env, port, '/readyz');
      try {
        let dbUrl = pg?.url ?? '';
        if (!pg) {
          const dbPort = listeningPorts(app.pid).find((p) => p !== port);
          if (!dbPort) throw new Error('could not find the embedded database port');
          dbUrl = `postgres://postgres:postgres@127.0.0.1:${dbPort}/postgres`;
        }
        const ctx: Ctx = {
          db,
          app,
          api: api(app.url, KEY),
          dbUrl,
          quick: args.quick,
          ...(fake ? { model: 'bench-compat' } : {}),
          startBare: async () => {
            const barePort = await freePort();
            return startProcess(
              'bare Fastify + pg',
              [join(DIST, 'bench', 'bare-server.js')],
              { DATABASE_URL: dbUrl, PORT: String(barePort), POOL: db === 'postgres' ? (env.DB_POOL_SIZE ?? '10') : '2' },
              barePort,
              '/healthz',
            );
          },
        };
        // The database is kept across the benchmarks: one endpoint for all of them.
        if (receiver && !receiver.secret) await subscribe(ctx, receiver);
        const received0 = receiver?.received ?? 0;
        const l = load1();
        log(`${name} on ${db} (load ${l})${receiver ? ' with one webhook endpoint subscribed to every event' : ''}`);
        try {
          const r = await BENCHES[name](ctx);
          if (fake) r.notes.push(`--model openai_compatible: the fake OpenAI-compatible server answered ${fake.calls()} model calls so far`);
          if (receiver) r.notes.push(`webhooks on: one endpoint subscribed to every event; ${receiver.received - received0} deliveries received (${receiver.invalid} not verifying) by the end of the benchmark`);
          results.push({ ...r, load1: l });
          printResult({ ...r, load1: l });
          if (args.metrics) {
            const file = join(ROOT, 'bench', 'results', `metrics-${db}-${name}-${Date.now()}.txt`);
            mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
            writeFileSync(file, await (await fetch(`${app.url}/metrics`)).text());
            log(`/metrics saved to ${file}`);
          }
        } catch (err) {
          log(`${name} on ${db} FAILED: ${(err as Error).stack}`);
          results.push({ bench: name, db, load1: l, figures: [], notes: [`failed: ${(err as Error).message}`] });
        }
      } finally {
        await app.stop();
      }
    }
  } finally {
    await receiver?.stop();
    await fake?.close();
    await pg?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return results;
}

function printResult(r: BenchResult): void {
  const lines = [`\n${r.bench} (${r.db}, load ${r.load1})`];
  for (const f of r.figures) {
    const target = f.target ? `  target ${f.target.op} ${f.target.value}  ${f.ok ? 'MET' : 'MISSED'}` : '';
    const base = f.baseline ? `  (${f.baseline.name}: ${f.baseline.value})` : '';
    lines.push(`  ${f.name}: ${f.value} ${f.unit}${base}${target}`);
  }
  for (const n of r.notes) lines.push(`  - ${n}`);
  process.stdout.write(lines.join('\n') + '\n');
}

/** The README table rows for these results (one row per figure with a target or baseline). */
export function markdownRows(results: BenchResult[]): string {
  const rows: string[] = [];
  for (const r of results) {
    for (const f of r.figures) {
      const target = f.target ? `${f.target.op} ${f.target.value} ${f.unit}` : '';
      const baseline = f.baseline ? `${f.baseline.name}: ${f.baseline.value}` : '';
      const ratio = f.target ? (f.target.op === '>=' ? f.value / f.target.value : f.target.value / f.value) : NaN;
      const verdict = f.ok === undefined ? '' : f.ok ? 'met' : '**missed**';
      rows.push(`| ${r.bench} | ${r.db} | ${f.name} | ${f.value} ${f.unit} | ${target} | ${baseline} | ${Number.isFinite(ratio) ? ratio.toFixed(2) : ''} | ${verdict} | ${r.load1} |`);
    }
  }
  return rows.join('\n');
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (!existsSync(join(DIST, 'src', 'main.js'))) throw new Error('dist/src/main.js is missing: run `npm run build` first');
  const all: BenchResult[] = [];
  for (const db of args.dbs) all.push(...(await runFor(db, args)));
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'latest.json');
  const previous: BenchResult[] = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')).results : [];
  const merged = [...previous.filter((p) => !all.some((r) => r.bench === p.bench && r.db === p.db)), ...all];
  merged.sort((a, b) => a.bench.localeCompare(b.bench) || a.db.localeCompare(b.db));
  writeFileSync(file, JSON.stringify({ updated_at: new Date().toISOString(), results: merged }, null, 2) + '\n');
  process.stdout.write(
    `\n| bench | db | figure | value | target | baseline | ratio to target | verdict | load (1 min) |\n|---|---|---|---|---|---|---|---|---|\n${markdownRows(all)}\n`,
  );
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${(err as Error).stack}\n`);
  process.exit(1);
});
