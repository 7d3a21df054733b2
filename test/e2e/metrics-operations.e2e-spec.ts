import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { OUTBOX_SCRAPE_MIN_INTERVAL_MS } from '../../src/common/metrics/metrics';
import { createSession, isTerminal, script, startRun, userInput, waitForRun } from '../helpers/runs';
import { openSse } from '../helpers/sse-client';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/** Parses the Prometheus text format into `name{labels}` -> value. */
function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

/**
 * The on-call metrics (issue 15, item 6), scraped from /metrics after real runs: each one must
 * move by what the test did, and nothing carries a run or session id.
 */
describe('operability: run, model, tool, pool, error and outbox metrics', () => {
  let t: TestApp;
  const key = KEYS.adminA;
  const scrape = async () => parseMetrics(await (await fetch(`${t.url}/metrics`)).text());
  const get = (m: Map<string, number>, name: string) => m.get(name) ?? 0;

  beforeAll(async () => {
    t = await startTestApp({ SSE_MAX_PER_KEY: '1' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('counts runs by terminal status and reason, their duration, time to first event, model and tool calls by name', async () => {
    const before = await scrape();
    const sid = await createSession(t, key, { agent_id: 'assistant' });
    const ok = await startRun(t, key, sid, {
      input: userInput(script([{ tool_calls: [{ name: 'get_time', arguments: {} }] }, { text: 'done' }])),
      mode: 'sync',
    });
    expect(ok.status).toBe(200);
    expect(ok.body.status).toBe('completed');
    const failed = await startRun(t, key, sid, { input: userInput(script([{ error: { code: 'model_timeout' } }])), mode: 'sync' });
    expect(failed.body.status).toBe('failed');
    const terminated = await startRun(t, key, sid, {
      input: userInput(script([{ tool_calls: [{ name: 'get_time', arguments: {} }] }, { text: 'never' }])),
      limits: { max_steps: 1 },
      mode: 'sync',
    });
    expect(terminated.body).toMatchObject({ status: 'terminated', termination_reason: 'max_steps' });

    const m = await scrape();
    const moved = (name: string) => get(m, name) - get(before, name);
    expect(moved('agent_api_runs_started_total')).toBe(3);
    expect(moved('agent_api_runs_finished_total{status="completed",reason="none"}')).toBe(1);
    expect(moved('agent_api_runs_finished_total{status="failed",reason="model_timeout"}')).toBe(1);
    expect(moved('agent_api_runs_finished_total{status="terminated",reason="max_steps"}')).toBe(1);
    expect(moved('agent_api_run_duration_seconds_count{status="completed"}')).toBe(1);
    expect(moved('agent_api_run_duration_seconds_count{status="failed"}')).toBe(1);
    expect(moved('agent_api_run_duration_seconds_sum{status="completed"}')).toBeGreaterThan(0);
    expect(moved('agent_api_run_time_to_first_event_seconds_count')).toBe(3);
    // Model turns: 2 of the completed run, 1 of the terminated one (it ends before its second), 1 failed.
    expect(moved('agent_api_model_call_duration_seconds_count{model="scripted",outcome="ok"}')).toBe(3);
    expect(moved('agent_api_model_call_duration_seconds_count{model="scripted",outcome="model_timeout"}')).toBe(1);
    expect(moved('agent_api_tool_call_duration_seconds_count{tool="get_time",outcome="ok"}')).toBe(2);
    // Every checkout of the pool is a sample (0 s when a connection was free).
    expect(moved('agent_api_db_pool_wait_seconds_count{priority="interactive"}')).toBeGreaterThan(0);
    expect(moved('agent_api_db_pool_wait_seconds_count{priority="background"}') + moved('agent_api_db_pool_wait_seconds_count{priority="run-start"}')).toBeGreaterThan(0);
    // Low cardinality: no label carries an id.
    expect([...m.keys()].filter((k) => /run_[0-9A-Z]|sess_[0-9A-Z]|msg_[0-9A-Z]/.test(k))).toEqual([]);
  });

  it('measures delivery lag on live deliveries only: replaying a finished run from cursor 0 adds nothing', async () => {
    const sid = await createSession(t, key, { agent_id: 'assistant' });
    const r = await startRun(t, key, sid, { input: userInput(script([{ text: 'abcdefgh', chunk_size: 2, delay_ms: 120 }])) });
    const live = await openSse(`${t.url}/v1/runs/${r.body.run_id}/events`, { headers: { authorization: `Bearer ${key}` } });
    const events = await live.collect('run.finished', 15000);
    await live.ended;
    const afterLive = await scrape();
    const lagCount = get(afterLive, 'agent_api_event_delivery_lag_seconds_count');
    // Events committed before the stream opened (at most run.started) are history, not lag.
    expect(lagCount).toBeGreaterThanOrEqual(events.length - 2);
    const lagSum = get(afterLive, 'agent_api_event_delivery_lag_seconds_sum');

    await new Promise((res) => setTimeout(res, 300));
    for (let i = 0; i < 2; i++) {
      const replay = await openSse(`${t.url}/v1/runs/${r.body.run_id}/events`, { headers: { authorization: `Bearer ${key}`, 'last-event-id': '0' } });
      expect(replay.status).toBe(200);
      const again = await replay.collect('run.finished', 15000);
      expect(again.length).toBe(events.length);
      await replay.ended;
    }
    const afterReplay = await scrape();
    expect(get(afterReplay, 'agent_api_event_delivery_lag_seconds_count')).toBe(lagCount);
    expect(get(afterReplay, 'agent_api_event_delivery_lag_seconds_sum')).toBe(lagSum);
    await waitForRun(t, key, r.body.run_id, isTerminal);
  });

  it('counts 429s by route, error responses by code, and idempotent replays', async () => {
    const before = await scrape();
    const sid = await createSession(t, key);
    // SSE_MAX_PER_KEY=1: the second open stream of the key is 429 rate_limited.
    const first = await openSse(`${t.url}/v1/sessions/${sid}/events`, { headers: { authorization: `Bearer ${key}` } });
    expect(first.status).toBe(200);
    const second = await fetch(`${t.url}/v1/sessions/${sid}/events`, { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' } });
    expect(second.status).toBe(429);
    await second.text();
    first.close();

    const h = { 'idempotency-key': `metrics-replay-${Date.now()}` };
    expect((await t.call(key, 'POST', '/v1/sessions', { title: 'once' }, h)).status).toBe(201);
    const replayed = await t.call(key, 'POST', '/v1/sessions', { title: 'once' }, h);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect((await t.call(key, 'POST', '/v1/sessions', { title: 'other' }, h)).status).toBe(409);
    expect((await t.call(key, 'GET', '/v1/sessions/sess_nope')).status).toBe(404);
    expect((await t.call(null, 'GET', '/v1/sessions')).status).toBe(401);

    const m = await scrape();
    const moved = (name: string) => get(m, name) - get(before, name);
    expect(moved('agent_api_rate_limited_total{route="/v1/sessions/:id/events"}')).toBe(1);
    expect(moved('agent_api_http_errors_total{status="429",code="rate_limited"}')).toBe(1);
    expect(moved('agent_api_idempotency_replays_total{route="/v1/sessions"}')).toBe(1);
    expect(moved('agent_api_http_errors_total{status="409",code="idempotency_conflict"}')).toBe(1);
    expect(moved('agent_api_http_errors_total{status="404",code="session_not_found"}')).toBe(1);
    expect(moved('agent_api_http_errors_total{status="401",code="unauthorized"}')).toBe(1);
  });

  it('exports the audit outbox backlog and the age of its oldest row, read at most every 5 s', async () => {
    // A fresh read first: a scrape within 5 s of the previous test's would serve that one's cached
    // value, whose interval could then end between the two scrapes compared below.
    await new Promise((res) => setTimeout(res, OUTBOX_SCRAPE_MIN_INTERVAL_MS + 100));
    const firstScrapeAt = Date.now();
    // The backlog then: other tests' records may still wait for the background drain (embedded, loaded machine).
    const first = await scrape();
    // A record queued 60 s ago that no drain has chained yet (nothing kicks the drainer: this
    // test writes nothing else), as a crash before the drain would leave it.
    await new Promise((res) => setTimeout(res, 300));
    const record = {
      tenantId: 'tenant_outbox_probe', occurredAt: new Date(Date.now() - 60_000).toISOString(), actorSubjectId: 'probe', actorRole: 'admin',
      actorKeyId: null, action: 'probe.queued', resourceType: 'probe', resourceId: 'probe_1', sessionId: null, runId: null, requestId: null,
      outcome: 'ok', status: null, data: {},
    };
    await t.app.get(DataSource).query(`INSERT INTO audit_outbox (tenant_id, record) VALUES ($1, $2::jsonb)`, [record.tenantId, JSON.stringify(record)]);
    // Within 5 s of the last scrape the cached value is served: no query per scrape.
    const cached = await scrape();
    // (Only when this scrape really came within the 5 s: on a loaded machine the steps above can take longer.)
    if (Date.now() - firstScrapeAt < OUTBOX_SCRAPE_MIN_INTERVAL_MS) {
      expect(get(cached, 'agent_api_outbox_backlog{outbox="audit"}')).toBe(get(first, 'agent_api_outbox_backlog{outbox="audit"}'));
    }
    await new Promise((res) => setTimeout(res, OUTBOX_SCRAPE_MIN_INTERVAL_MS + 100));
    const m = await scrape();
    // The probe is counted (at least it: the drain may still be behind on others) and is the oldest.
    expect(get(m, 'agent_api_outbox_backlog{outbox="audit"}')).toBeGreaterThanOrEqual(1);
    expect(get(m, 'agent_api_outbox_oldest_age_seconds{outbox="audit"}')).toBeGreaterThanOrEqual(59);
  }, 40000);

  it('the Grafana dashboard (deploy/grafana) charts only metrics this node exports', async () => {
    const dashboard = JSON.parse(readFileSync(join(__dirname, '../../deploy/grafana/agent-api-dashboard.json'), 'utf8'));
    const exprs: string[] = dashboard.panels.flatMap((p: any) => (p.targets ?? []).map((t: any) => t.expr));
    expect(exprs.length).toBeGreaterThan(20);
    const names = new Set([...(await scrape()).keys()].map((k) => k.replace(/\{.*$/, '')));
    const used = [...new Set(exprs.flatMap((e) => e.match(/agent_api_[a-z0-9_]+/g) ?? []))];
    expect(used.filter((n) => !names.has(n))).toEqual([]);
  });
});
