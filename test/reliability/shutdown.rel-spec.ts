import {
  allEvents,
  createSession,
  Figures,
  freshDatabase,
  KEY,
  NodeProcess,
  script,
  sql,
  SseReader,
  startNode,
  startRun,
  tempDir,
  TERMINAL,
  waitForRunStatus,
} from './rel-helpers';

/**
 * Graceful shutdown (issue 6 item 4, CONTRACT section 12): SIGTERM during an active run and open
 * SSE streams: the process stops accepting, ends the streams cleanly, releases the run's lease and
 * exits within 10 s; a restart on the same data finishes the run, and the client resumes its
 * stream with Last-Event-ID without a gap or a duplicate.
 */
describe('graceful shutdown on SIGTERM', () => {
  const dir = tempDir();
  let db: Awaited<ReturnType<typeof freshDatabase>> = null;
  const nodes: NodeProcess[] = [];
  const figures = new Figures('shutdown');

  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => {
    for (const n of nodes) await n.kill9();
    await db?.drop();
    dir.remove();
  });

  it('exits within 10 s, ends SSE cleanly, releases the lease, and a restart finishes the run', async () => {
    // A long lease: if SIGTERM did not release it, the restart could not resume the run for 60 s.
    const env = { RUN_LEASE_MS: '60000' };
    const a = await startNode({ name: 'shutdown-a', dataDir: dir.path, databaseUrl: db?.url, env });
    nodes.push(a);
    const text = 'Shutting down gracefully, one chunk at a time. '.repeat(8);
    const sid = await createSession(a);
    const r = await startRun(a, sid, script([{ text, chunk_size: 3, delay_ms: 40 }]));
    expect(r.status).toBe(202);
    figures.runsAccepted++;
    const runId = r.body.run_id;
    const runStream = new SseReader(`${a.url}/v1/runs/${runId}/events`, KEY);
    const sessionStream = new SseReader(`${a.url}/v1/sessions/${sid}/events`, KEY);
    await Promise.all([runStream.opened, sessionStream.opened]);
    expect([runStream.status, sessionStream.status]).toEqual([200, 200]);
    await runStream.waitFor('the answer to be mid-stream', 30_000, (ev) => ev.filter((e) => e.type === 'message.delta').length >= 3);

    const termAt = a.sigterm();
    await new Promise((res) => setTimeout(res, 300)); // signal delivery
    // Stop accepting: a new request right after the signal is refused (or answered 503), never served.
    const late = await fetch(`${a.url}/v1/sessions`, { headers: { authorization: `Bearer ${KEY}` }, signal: AbortSignal.timeout(5000) }).then(
      (res) => res.status,
      () => 'refused',
    );
    expect(['refused', 503]).toContain(late);
    const exit = await Promise.race([a.exited, new Promise<null>((res) => setTimeout(() => res(null), 15_000))]);
    expect(exit).not.toBeNull();
    const exitMs = exit!.at - termAt;
    expect(exit!.code).toBe(0);
    expect(exitMs).toBeLessThan(10_000);
    await Promise.all([runStream.done, sessionStream.done]);
    expect(runStream.end).toBe('clean');
    expect(sessionStream.end).toBe('clean');
    expect(runStream.events.some((e) => e.type === 'run.finished')).toBe(false);
    if (db) {
      const rows = await sql(db.url, `SELECT status, lease_owner FROM runs WHERE id = $1`, [runId]);
      expect(rows).toEqual([{ status: 'running', lease_owner: null }]);
    }

    // A restart on the same data resumes the run at once (lease released), and the client resumes its stream.
    const b = await startNode({ name: 'shutdown-b', dataDir: dir.path, databaseUrl: db?.url, env });
    nodes.push(b);
    const bReadyAt = Date.now();
    const lastSeen = runStream.events[runStream.events.length - 1].id;
    const resumed = new SseReader(`${b.url}/v1/runs/${runId}/events`, KEY, { 'last-event-id': String(lastSeen) });
    const done = await waitForRunStatus(b, runId, (x) => TERMINAL.includes(x.status), 30_000);
    const resumeMs = Date.now() - bReadyAt;
    expect(done.status).toBe('completed');
    expect(resumeMs).toBeLessThan(20_000);
    figures.runsFinished++;
    await resumed.waitFor('run.finished after resuming', 20_000, (ev) => ev.some((e) => e.type === 'run.finished'));
    await resumed.done;
    expect(resumed.end).toBe('clean');
    const stored = await allEvents(b, runId);
    figures.checkRun(runId, stored);
    const seen = [...runStream.events, ...resumed.events];
    expect(seen.map((e) => e.id)).toEqual(stored.map((e) => e.sequence));
    const final = await b.call('GET', `/v1/sessions/${sid}/messages/${done.final_message_id}`);
    expect(final.body.content).toEqual([{ type: 'text', text }]);
    expect(a.output()).toContain('shut down cleanly');
    expect(a.output()).not.toContain(KEY);

    figures.print({ exit_ms: exitMs, resumed_after_restart_ms: resumeMs, sse_events_before_and_after: seen.length });
    expect(figures.problems).toEqual([]);
    expect(figures.duplicates).toBe(0);
    expect(figures.gaps).toBe(0);
  }, 300_000);
});
