import {
  allEvents,
  createSession,
  Figures,
  freshDatabase,
  getRun,
  NodeProcess,
  script,
  startNode,
  startRun,
  tempDir,
  TERMINAL,
  until,
  waitForRunStatus,
} from './rel-helpers';

/**
 * Crash recovery (issue 6 item 1, CONTRACT sections 8 and 9): `kill -9` of the process while runs
 * are mid-tool, mid-stream and waiting for an approval; a restart on the same data resumes them.
 * Runs on the embedded database (same DATA_DIR) and on PostgreSQL (same database).
 */
describe('crash: kill -9 mid-tool and mid-stream, restart on the same data', () => {
  const dir = tempDir();
  let db: Awaited<ReturnType<typeof freshDatabase>> = null;
  const nodes: NodeProcess[] = [];
  const figures = new Figures('crash');

  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => {
    for (const n of nodes) await n.kill9();
    await db?.drop();
    dir.remove();
  });

  it('resumes every run: one run.finished each, gap-free streams, idempotent tool re-run with the same call id, approvals still pending', async () => {
    const a = await startNode({ name: 'crash-a', dataDir: dir.path, databaseUrl: db?.url });
    nodes.push(a);

    const longText = 'The quick brown fox jumps over the lazy dog. '.repeat(10); // 450 chars
    const sTool = await createSession(a);
    const sStream = await createSession(a);
    const sApproval = await createSession(a);
    const sQuick = await createSession(a);
    const rTool = await startRun(a, sTool, script([{ tool_calls: [{ name: 'slow_tool', arguments: { ms: 8000 } }] }, { text: 'the slow tool finished' }]));
    const rStream = await startRun(a, sStream, script([{ text: longText, chunk_size: 3, delay_ms: 40 }]));
    const rApproval = await startRun(a, sApproval, script([{ tool_calls: [{ name: 'create_ticket', arguments: { order_id: 'O-1001', reason: 'arrived broken' } }] }, { text: 'ticket handled' }]));
    const quick = [];
    for (let i = 0; i < 3; i++) quick.push(await startRun(a, sQuick, `echo ${i}`, undefined, { concurrency: 'enqueue' }));
    for (const r of [rTool, rStream, rApproval, ...quick]) expect(r.status).toBe(202);
    figures.runsAccepted += 3 + quick.length;
    const toolRunId = rTool.body.run_id;
    const streamRunId = rStream.body.run_id;
    const approvalRunId = rApproval.body.run_id;

    // Wait for the moment to strike: the tool is executing, the answer is half streamed, the approval is pending.
    await until('the tool to be executing', 30_000, async () => ((await allEvents(a, toolRunId)).some((e) => e.type === 'tool.started') ? true : undefined));
    await until('the answer to be mid-stream', 30_000, async () => {
      const ev = await allEvents(a, streamRunId);
      return ev.some((e) => e.type === 'message.delta') && !ev.some((e) => e.type === 'message.completed') ? true : undefined;
    });
    await waitForRunStatus(a, approvalRunId, (r) => r.status === 'waiting_for_approval', 30_000);
    const pendingBefore = (await a.call('GET', `/v1/runs/${approvalRunId}/approvals`)).body.data;
    expect(pendingBefore).toHaveLength(1);
    expect(pendingBefore[0].status).toBe('pending');
    const streamBefore = await allEvents(a, streamRunId);
    expect((await getRun(a, streamRunId)).status).toBe('running');

    await a.kill9();

    const b = await startNode({ name: 'crash-b', dataDir: dir.path, databaseUrl: db?.url });
    nodes.push(b);
    const resumedAt = Date.now();

    const done = await Promise.all([toolRunId, streamRunId, ...quick.map((q) => q.body.run_id)].map((id) => waitForRunStatus(b, id, (r) => TERMINAL.includes(r.status), 90_000)));
    const tookOverMs = Date.now() - resumedAt;
    for (const run of done) expect(run.status).toBe('completed');
    figures.runsFinished += done.length;

    // Mid-tool: the idempotent slow_tool was run again with the same tool_call_id (attempt 2) and completed once.
    const toolEvents = await allEvents(b, toolRunId);
    figures.checkRun(toolRunId, toolEvents);
    const starts = toolEvents.filter((e) => e.type === 'tool.started');
    expect(starts.map((e) => e.data.attempt)).toEqual([1, 2]);
    expect(new Set(starts.map((e) => e.data.tool_call_id)).size).toBe(1);
    expect(toolEvents.filter((e) => e.type === 'tool.requested')).toHaveLength(1);
    expect(toolEvents.filter((e) => e.type === 'tool.completed')).toHaveLength(1);

    // Mid-stream: the events before the crash are a prefix of the final stream; the final text is exact.
    const streamEvents = await allEvents(b, streamRunId);
    figures.checkRun(streamRunId, streamEvents);
    expect(streamEvents.slice(0, streamBefore.length).map((e) => e.event_id)).toEqual(streamBefore.map((e) => e.event_id));
    const final = await b.call('GET', `/v1/sessions/${sStream}/messages/${done[1].final_message_id}`);
    expect(final.body.content).toEqual([{ type: 'text', text: longText }]);

    for (const q of quick) figures.checkRun(q.body.run_id, await allEvents(b, q.body.run_id));

    // The approval pending before the crash is still pending, and deciding it finishes the run.
    const waiting = await getRun(b, approvalRunId);
    expect(waiting.status).toBe('waiting_for_approval');
    const pendingAfter = (await b.call('GET', `/v1/runs/${approvalRunId}/approvals`)).body.data;
    expect(pendingAfter.map((x: any) => [x.id, x.status])).toEqual([[pendingBefore[0].id, 'pending']]);
    const decided = await b.call('POST', `/v1/runs/${approvalRunId}/approvals/${pendingBefore[0].id}`, { decision: 'approve' }, { 'idempotency-key': `approve-${approvalRunId}` });
    expect(decided.status).toBe(200);
    const approved = await waitForRunStatus(b, approvalRunId, (r) => TERMINAL.includes(r.status), 60_000);
    expect(approved.status).toBe('completed');
    figures.runsFinished++;
    figures.checkRun(approvalRunId, await allEvents(b, approvalRunId));

    figures.print({ take_over_ms: tookOverMs });
    expect(figures.problems).toEqual([]);
    expect(figures.duplicates).toBe(0);
    expect(figures.gaps).toBe(0);
    expect(figures.runsFinished).toBe(figures.runsAccepted);
  }, 300_000);
});
