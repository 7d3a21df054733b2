import { Client } from 'pg';
import { createSession, startRun } from './lib/api';
import { cpuMs } from './lib/server';
import { log, percentile, sleep } from './lib/util';
import { BenchReceiver } from './lib/webhook-receiver';
import type { BenchResult, Ctx } from './scenarios';
import { fig } from './scenarios';

const ALL_EVENTS = ['run.completed', 'run.failed', 'run.cancelled', 'run.expired', 'run.terminated', 'run.requires_action', 'attachment.ready', 'attachment.rejected'];

/** Creates one endpoint (every event type) for `receiver` and hands it the secret. */
export async function subscribe(ctx: Ctx, receiver: BenchReceiver, events = ALL_EVENTS): Promise<string> {
  const r = await ctx.api.call('POST', '/v1/webhooks', { url: receiver.url, events, description: 'bench' });
  if (r.status !== 201) throw new Error(`create webhook: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
  receiver.secret = r.body.secret;
  return r.body.id;
}

async function until(what: string, ms: number, check: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await sleep(50);
  }
}

// ---- B6 webhook delivery -------------------------------------------------------------------

/**
 * 10,000 queued events delivered to a receiver on loopback that verifies each one. The events
 * are `run.completed` of 50 real runs (the worker renders each body through the runs module's
 * query), committed to the outbox in ONE transaction the way the runs module writes them (one
 * `integration_events` row each); the clock starts at that commit. Measured: until the receiver
 * has all 10,000 (distinct webhook-ids) and until every delivery is recorded `delivered`.
 */
export async function b6(ctx: Ctx): Promise<Omit<BenchResult, 'load1'>> {
  const events = 10_000;
  const objects = 50;
  const receiver = await new BenchReceiver().start();
  const c = new Client({ connectionString: ctx.dbUrl });
  await c.connect();
  try {
    const runIds: string[] = [];
    for (let i = 0; i < objects; i++) runIds.push(await startRun(ctx.api, await createSession(ctx.api), [{ text: `object ${i}` }]));
    // The setup runs' own events leave the outbox (no endpoint yet: dropped) before the endpoint exists.
    await until('setup runs completed', 60_000, async () => (await c.query(`SELECT count(*)::int AS n FROM runs WHERE status = 'completed'`)).rows[0].n >= objects);
    await until('outbox empty', 30_000, async () => (await c.query(`SELECT count(*)::int AS n FROM integration_events`)).rows[0].n === 0);
    const endpoint = await subscribe(ctx, receiver, ['run.completed']);
    log(`B6: ${events} run.completed events of ${objects} runs queued in one transaction, delivered to ${receiver.url}`);
    const tenant = (await c.query(`SELECT tenant_id FROM runs LIMIT 1`)).rows[0].tenant_id as string;
    const cpu0 = cpuMs(ctx.app.pid);
    await c.query(
      `INSERT INTO integration_events (tenant_id, type, object_id, payload)
       SELECT $1, 'run.completed', ($2::text[])[1 + (g % $3)], jsonb_build_object('status', 'completed')
         FROM generate_series(0, $4 - 1) g`,
      [tenant, runIds, objects, events],
    );
    const t0 = performance.now();
    await until(`${events} deliveries received`, 600_000, async () => receiver.ids.size >= events);
    const received = performance.now() - t0;
    await until(`${events} deliveries recorded`, 120_000, async () => (await c.query(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'delivered'`, [endpoint])).rows[0].n >= events);
    const recorded = performance.now() - t0;
    const cpu = (cpuMs(ctx.app.pid) - cpu0) / recorded;
    const attempts = (await c.query(`SELECT sum(attempts)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1`, [endpoint])).rows[0].n as number;
    return {
      bench: 'B6',
      db: ctx.db,
      figures: [
        fig(`${events} queued events delivered (all received)`, received / 1000, 's'),
        fig('deliveries/s (until all received)', events / (received / 1000), 'deliveries/s'),
        fig('event to receipt p50', percentile(receiver.latencies, 50), 'ms'),
        fig('event to receipt p99', percentile(receiver.latencies, 99), 'ms'),
        fig('all recorded delivered', recorded / 1000, 's'),
        fig('server CPU', cpu, 'cores'),
      ],
      notes: [
        `${receiver.received} requests received, ${receiver.ids.size} distinct webhook-ids, ${receiver.invalid} not verifying; ${attempts} attempts recorded`,
        'one endpoint; the worker claims 16 due deliveries per statement and attempts them concurrently; each body is rendered at the attempt through the runs query (one read per delivery)',
      ],
    };
  } finally {
    await c.end();
    await receiver.stop();
  }
}
