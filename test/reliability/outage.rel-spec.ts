import { createServer, Server, Socket, connect } from 'node:net';
import {
  allEvents,
  createSession,
  Figures,
  freePort,
  freshDatabase,
  NodeProcess,
  requirePostgres,
  sleep,
  startNode,
  startRun,
  tempDir,
  TERMINAL,
  until,
  waitForRunStatus,
} from './rel-helpers';

/**
 * A TCP proxy on 127.0.0.1 between the app and PostgreSQL. `cut()` behaves like a stopped server
 * (open connections are reset, new ones refused); `restore()` listens again on the same port.
 * The machine's shared PostgreSQL server is never touched.
 */
class TcpProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(port = 0): Promise<void> {
    this.port = port || (await freePort());
    const server = createServer((client) => {
      const upstream = connect(this.targetPort, this.targetHost);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      const forward = (to: Socket) => (d: Buffer) => {
        if (this.partitioned) this.held.push(() => to.write(d));
        else to.write(d);
      };
      client.on('data', forward(upstream));
      upstream.on('data', forward(client));
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((res, rej) => {
      server.once('error', rej);
      server.listen(this.port, '127.0.0.1', () => res());
    });
    this.server = server;
  }

  private partitioned = false;
  private held: Array<() => void> = [];

  /**
   * A network partition: connections stay open and new ones are accepted, but no byte gets through
   * until it heals; then the held bytes are delivered in order (as TCP retransmission would).
   */
  partition(on: boolean): void {
    this.partitioned = on;
    if (!on) for (const send of this.held.splice(0)) send();
  }

  async cut(): Promise<void> {
    const s = this.server;
    this.server = null;
    const closed = s ? new Promise<void>((r) => s.close(() => r())) : Promise.resolve();
    for (const sock of this.sockets) sock.resetAndDestroy?.() ?? sock.destroy();
    this.sockets.clear();
    await closed;
  }

  async restore(): Promise<void> {
    await this.start(this.port);
  }
}

interface Sample {
  what: string;
  status: number;
  ms: number;
  code?: string;
  retryAfter?: string | null;
  phase: 'before' | 'cut' | 'after';
}

/**
 * Database outage under load (issue 6 item 3): requests get 503 `unavailable` with Retry-After,
 * /readyz is 503, nothing hangs; after the database is back the service recovers without a restart
 * and every run that got a 2xx is still there and finishes.
 */
describe('database outage under load', () => {
  const dir = tempDir();
  let db: Awaited<ReturnType<typeof freshDatabase>> = null;
  let proxy: TcpProxy;
  let node: NodeProcess | null = null;

  beforeAll(async () => {
    const base = new URL(requirePostgres());
    db = await freshDatabase();
    proxy = new TcpProxy(base.hostname, Number(base.port || 5432));
    await proxy.start();
  });
  afterAll(async () => {
    await node?.kill9();
    await proxy?.cut();
    await db?.drop();
    dir.remove();
  });

  async function scenario(mode: 'stop' | 'partition'): Promise<void> {
    const viaProxy = new URL(db!.url);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    const n = await startNode({ name: `outage-${mode}`, dataDir: dir.path, databaseUrl: viaProxy.toString(), env: { RUN_LEASE_MS: '2000' } });
    node = n;
    const figures = new Figures(mode === 'stop' ? 'outage' : 'partition');

    let phase: Sample['phase'] = 'before';
    const samples: Sample[] = [];
    const accepted: string[] = [];
    const hung: string[] = [];
    let stop = false;
    const REQUEST_BOUND_MS = 12_000;

    const timed = async (what: string, fn: () => Promise<{ status: number; body: any; headers: Headers }>): Promise<{ status: number; body: any } | null> => {
      const p = phase;
      const started = Date.now();
      try {
        const r = await fn();
        samples.push({ what, status: r.status, ms: Date.now() - started, code: r.body?.error?.code, retryAfter: r.headers.get('retry-after'), phase: p });
        return r;
      } catch (err) {
        hung.push(`${what} in phase ${p}: ${(err as Error).message} after ${Date.now() - started} ms`);
        return null;
      }
    };

    const client = async () => {
      while (!stop) {
        const s = await timed('POST /v1/sessions', () => n.call('POST', '/v1/sessions', {}, {}, undefined, REQUEST_BOUND_MS));
        if (s?.status === 201) {
          const r = await timed('POST /v1/sessions/:id/runs', () => startRun(n, s.body.id, `hello ${accepted.length}`));
          if (r?.status === 202) accepted.push(r.body.run_id);
        }
        await sleep(50);
      }
    };
    const readiness = async () => {
      while (!stop) {
        await timed('GET /readyz', () => n.call('GET', '/readyz', undefined, {}, null, REQUEST_BOUND_MS));
        await sleep(200);
      }
    };
    const load = Promise.all([client(), client(), client(), client(), readiness()]);

    await sleep(3000);
    phase = 'cut';
    if (mode === 'stop') await proxy.cut();
    else proxy.partition(true);
    await sleep(7000);
    phase = 'after';
    if (mode === 'stop') await proxy.restore();
    else proxy.partition(false);
    const restoredAt = Date.now();
    await until('/readyz to be 200 again', 30_000, async () => (samples.some((x) => x.what === 'GET /readyz' && x.phase === 'after' && x.status === 200) ? true : undefined), 100);
    const recoveredMs = Date.now() - restoredAt;
    await until('new runs to be accepted again', 30_000, async () => (samples.some((x) => x.phase === 'after' && x.status === 202 && Date.now() - restoredAt > 0) ? true : undefined), 100);
    await sleep(2000);
    stop = true;
    await load;

    const during = samples.filter((x) => x.phase === 'cut');
    const unexpected = samples.filter((x) => ![200, 201, 202, 503].includes(x.status));
    const maxMs = Math.max(...samples.map((x) => x.ms));
    expect(hung).toEqual([]);
    expect(unexpected).toEqual([]);
    expect(maxMs).toBeLessThan(REQUEST_BOUND_MS);
    // While the database was away: 503 unavailable with Retry-After, /readyz 503.
    const unavailable = during.filter((x) => x.status === 503);
    expect(unavailable.length).toBeGreaterThan(0);
    for (const x of unavailable) {
      if (x.what !== 'GET /readyz') expect(x.code).toBe('unavailable');
      expect(Number(x.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    expect(during.some((x) => x.what === 'GET /readyz' && x.status === 503)).toBe(true);
    expect(samples.some((x) => x.phase === 'before' && x.status === 202)).toBe(true);
    expect(samples.some((x) => x.phase === 'after' && x.status === 202)).toBe(true);

    // Every run that got a 202 is there and finishes.
    figures.runsAccepted = accepted.length;
    for (const id of accepted) {
      const run = await waitForRunStatus(n, id, (r) => TERMINAL.includes(r.status), 90_000);
      expect([id, run.status]).toEqual([id, 'completed']);
      figures.runsFinished++;
      figures.checkRun(id, await allEvents(n, id));
    }
    figures.print({
      requests: samples.length,
      answered_503_during_outage: unavailable.length,
      max_request_ms: maxMs,
      ready_again_after_restore_ms: recoveredMs,
    });
    expect(figures.problems).toEqual([]);
    expect(figures.duplicates).toBe(0);
    expect(figures.gaps).toBe(0);
    expect(figures.runsFinished).toBe(figures.runsAccepted);
    await n.kill9();
  }

  it('stopped PostgreSQL: answers 503 unavailable quickly, recovers without a restart, loses no accepted run', () => scenario('stop'), 300_000);

  it('a 7 s network partition to PostgreSQL: requests wait at most the partition, /readyz is 503, it recovers and loses no accepted run', () => scenario('partition'), 300_000);
});
