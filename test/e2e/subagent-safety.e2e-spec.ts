import { RunSignals } from '../../src/modules/runs/application/run-signals';
import { contractOrderProblems, createSession, isTerminal, runEvents, script, startRun, userInput, waitForRun } from '../helpers/runs';
import { openSse } from '../helpers/sse-client';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/**
 * The rules that make subagents safe (CONTRACT 16): an approval inside a child is listed by the
 * parent run's approvals route, reaches the parent's stream as `approval.requested` naming the
 * child's run, and is decided through the parent (the child goes on, then the parent); only the
 * owner (and admins) see it. A parent's cancel whose cascade signal is lost (as by a crash right
 * after the commit) still reaches its children (the recovery sweep).
 */
describe('multi-agent: approvals inside subagents and the recoverable cancel cascade (CONTRACT 16)', () => {
  let t: TestApp;
  const admin = KEYS.adminA;
  const member = KEYS.memberA1;
  const other = KEYS.memberA2;

  beforeAll(async () => {
    t = await startTestApp();
    // `create_ticket` is risk `approve`: the clerk's call waits for an approval.
    expect((await t.call(admin, 'POST', '/v1/agents', { id: 'clerk', instructions: 'File tickets.', tools: ['create_ticket'] })).status).toBe(201);
    expect((await t.call(admin, 'POST', '/v1/agents', { id: 'desk', instructions: 'Delegate.', tools: [], subagents: { enabled: true, agents: ['clerk'], max_concurrent: 4 } })).status).toBe(201);
  }, 120_000);

  afterAll(async () => {
    await t?.close();
  });

  it("an approval inside a child: listed by the parent's route, on the parent's stream with the child's run_id, decided through the parent; the child then the parent finish", async () => {
    const sid = await createSession(t, member, { agent_id: 'desk' });
    const clerk = script([{ tool_calls: [{ name: 'create_ticket', arguments: { order_id: 'ord_77', reason: 'damaged' } }] }, { text: 'ticket filed' }]);
    const res = await startRun(t, member, sid, {
      input: userInput(
        script([
          { tool_calls: [{ name: 'create_subagent', arguments: { agent_id: 'clerk', name: 'c1', instructions: clerk } }] },
          { tool_calls: [{ name: 'wait_for_subagents', arguments: {} }] },
          { text: 'parent done' },
        ]),
      ),
    });
    expect(res.status).toBe(202);
    const parentId = res.body.run_id;
    // The parent's live stream, opened before the child asks.
    const stream = await openSse(`${t.url}/v1/runs/${parentId}/events`, { headers: { authorization: `Bearer ${member}` } });
    expect(stream.status).toBe(200);
    try {
      const seen = await stream.collect('approval.requested', 60_000);
      const asked = seen[seen.length - 1].json;
      expect(asked.type).toBe('approval.requested');
      const created = seen.find((e) => e.json.type === 'subagent.created')!.json.data;
      // The envelope is the parent's; the data names the child's run and the subagent.
      expect(asked).toMatchObject({ run_id: parentId, data: { tool_name: 'create_ticket', arguments: { order_id: 'ord_77', reason: 'damaged' }, risk: 'approve', run_id: created.run_id, subagent_id: created.subagent_id } });
      const childRunId: string = created.run_id;
      expect((await t.call(member, 'GET', `/v1/runs/${parentId}`)).body.status).toBe('waiting_for_subagents');
      expect((await waitForRun(t, member, childRunId, (r) => r.status === 'waiting_for_approval')).parent_run_id).toBe(parentId);

      // Listed by the parent's route (and the child's own), with the child's run_id.
      const listed = await t.call(member, 'GET', `/v1/runs/${parentId}/approvals`);
      expect(listed.status).toBe(200);
      expect(listed.body.data).toEqual([expect.objectContaining({ id: asked.data.approval_id, run_id: childRunId, status: 'pending', tool_name: 'create_ticket' })]);
      expect((await t.call(member, 'GET', `/v1/runs/${childRunId}/approvals`)).body.data.map((a: any) => a.id)).toEqual([asked.data.approval_id]);
      // Paged like any list: the child's approval is a valid cursor of the parent's list.
      expect((await t.call(member, 'GET', `/v1/runs/${parentId}/approvals?after=${asked.data.approval_id}`)).body).toMatchObject({ data: [], has_more: false });
      // An admin of the tenant sees it; another member sees neither run, nor can decide (404 as for a missing id).
      expect((await t.call(admin, 'GET', `/v1/runs/${parentId}/approvals`)).body.data).toHaveLength(1);
      expect((await t.call(other, 'GET', `/v1/runs/${parentId}/approvals`)).status).toBe(404);
      expect((await t.call(other, 'GET', `/v1/runs/${childRunId}/approvals`)).status).toBe(404);
      expect((await t.call(other, 'POST', `/v1/runs/${parentId}/approvals/${asked.data.approval_id}`, { decision: 'approve' })).status).toBe(404);
      expect((await t.call(KEYS.adminB, 'GET', `/v1/runs/${parentId}/approvals`)).status).toBe(404);

      // Decided through the parent: the approval is the child's; the child resumes and finishes.
      const decided = await t.call(member, 'POST', `/v1/runs/${parentId}/approvals/${asked.data.approval_id}`, { decision: 'approve', reason: 'ok' });
      expect(decided.status).toBe(200);
      expect(decided.body).toMatchObject({ id: asked.data.approval_id, run_id: childRunId, status: 'approved', decided_by: 'user_a1' });
      // The same decision again is 200 unchanged; the other one 409, as on the child's own route.
      expect((await t.call(member, 'POST', `/v1/runs/${parentId}/approvals/${asked.data.approval_id}`, { decision: 'approve' })).status).toBe(200);
      expect((await t.call(member, 'POST', `/v1/runs/${parentId}/approvals/${asked.data.approval_id}`, { decision: 'reject' })).body.error.code).toBe('approval_already_decided');
      const child = await waitForRun(t, member, childRunId, isTerminal, 60_000);
      expect(child.status).toBe('completed');
      const childEvents = await runEvents(t, member, childRunId);
      expect(childEvents.filter((e) => e.type === 'tool.completed' && e.data.tool_name === 'create_ticket')).toHaveLength(1);
      expect(childEvents.find((e) => e.type === 'approval.accepted').data).toMatchObject({ approval_id: asked.data.approval_id, decided_by: 'user_a1' });

      const parent = await waitForRun(t, member, parentId, isTerminal, 60_000);
      expect(parent.status).toBe('completed');
      const events = await runEvents(t, member, parentId);
      expect(contractOrderProblems(events)).toEqual([]);
      // Shown once on the parent's stream; the wait answered with the child's final text.
      expect(events.filter((e) => e.type === 'approval.requested')).toHaveLength(1);
      const waited = events.find((e) => e.type === 'tool.completed' && e.data.tool_name === 'wait_for_subagents');
      expect(waited.data.result).toMatchObject({ timed_out: false, subagents: [expect.objectContaining({ status: 'completed', text: 'ticket filed' })] });
      // An approval of another run is still not the parent's to decide.
      expect((await t.call(member, 'POST', `/v1/runs/${childRunId}/approvals/apr_nope`, { decision: 'approve' })).body.error.code).toBe('approval_not_found');
    } finally {
      stream.close();
    }
  }, 180_000);

  it("a member's parent lists only that member's children's approvals; a run that is not the parent does not decide them", async () => {
    const clerk = script([{ tool_calls: [{ name: 'create_ticket', arguments: { order_id: 'ord_1', reason: 'r' } }] }, { text: 'x' }]);
    const parentScript = script([{ tool_calls: [{ name: 'create_subagent', arguments: { agent_id: 'clerk', instructions: clerk } }] }, { tool_calls: [{ name: 'wait_for_subagents', arguments: {} }] }, { text: 'y' }]);
    const mine = await startRun(t, member, await createSession(t, member, { agent_id: 'desk' }), { input: userInput(parentScript) });
    const theirs = await startRun(t, other, await createSession(t, other, { agent_id: 'desk' }), { input: userInput(parentScript) });
    const pending = async (key: string, runId: string) => {
      for (let i = 0; ; i++) {
        const l = await t.call(key, 'GET', `/v1/runs/${runId}/approvals`);
        if (l.body.data.length > 0 || i === 600) return l.body.data as any[];
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const [a] = await pending(member, mine.body.run_id);
    const [b] = await pending(other, theirs.body.run_id);
    expect(a.run_id).not.toBe(b.run_id);
    // Each parent lists its own child's approval only.
    expect((await t.call(member, 'GET', `/v1/runs/${mine.body.run_id}/approvals`)).body.data.map((x: any) => x.id)).toEqual([a.id]);
    expect((await t.call(other, 'GET', `/v1/runs/${theirs.body.run_id}/approvals`)).body.data.map((x: any) => x.id)).toEqual([b.id]);
    // The other member's approval through my parent: not found (as a missing id), and not a cursor of my list.
    expect((await t.call(member, 'POST', `/v1/runs/${mine.body.run_id}/approvals/${b.id}`, { decision: 'approve' })).body.error.code).toBe('approval_not_found');
    expect((await t.call(member, 'GET', `/v1/runs/${mine.body.run_id}/approvals?after=${b.id}`)).body.error.code).toBe('invalid_cursor');
    // Nor is one child's approval decided through a sibling run (not its parent).
    expect((await t.call(admin, 'POST', `/v1/runs/${mine.body.run_id}/approvals/${b.id}`, { decision: 'approve' })).body.error.code).toBe('approval_not_found');
    // The admin sees both, each under its own parent.
    expect((await t.call(admin, 'GET', `/v1/runs/${theirs.body.run_id}/approvals`)).body.data.map((x: any) => x.id)).toEqual([b.id]);
    // Rejected through the parents: each child goes on without the tool, then its parent.
    for (const [key, run, apr] of [[member, mine.body.run_id, a.id], [other, theirs.body.run_id, b.id]] as const) {
      expect((await t.call(key, 'POST', `/v1/runs/${run}/approvals/${apr}`, { decision: 'reject' })).body.status).toBe('rejected');
      expect((await waitForRun(t, key, run, isTerminal, 60_000)).status).toBe('completed');
    }
  }, 180_000);

  it('children that end before their parent committed their start (8 parents at once, 4 fast children each): none is lost, none is outcome_unknown', async () => {
    // desk allows 4 at once: 4 creates in one turn, each child answering at once; 8 such parents
    // at once make the children's ends race their parents' commits (the commit of a child's start
    // conflicts with their ends, again and again; an end may come before its parent knows the child).
    const creates = [1, 2, 3, 4].map((i) => ({ name: 'create_subagent', arguments: { name: `f${i}`, instructions: script([{ text: `fast-${i}` }]) } }));
    const parentScript = script([{ tool_calls: creates }, { tool_calls: [{ name: 'wait_for_subagents', arguments: {} }] }, { text: 'got {{last_tool_result}}' }]);
    const started = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const sid = await createSession(t, member, { agent_id: 'desk' });
        return { sid, run: (await startRun(t, member, sid, { input: userInput(parentScript) })).body.run_id as string };
      }),
    );
    for (const { sid, run } of started) {
      const parent = await waitForRun(t, member, run, isTerminal, 60_000);
      expect(parent.status).toBe('completed');
      const events = await runEvents(t, member, parent.id);
      expect(events.filter((e) => e.type === 'tool.failed')).toEqual([]);
      expect(events.filter((e) => e.type === 'subagent.created')).toHaveLength(4);
      const final = (await t.call(member, 'GET', `/v1/sessions/${sid}/messages/${parent.final_message_id}`)).body.content[0].text;
      for (const i of [1, 2, 3, 4]) expect(final).toContain(`fast-${i}`);
    }
  }, 180_000);

  it("a parent's cancel whose cascade signal is lost (as by a crash right after its commit) still cancels its children (recovery sweep)", async () => {
    const signals = t.app.get(RunSignals);
    const cascade = signals.subagentRunsToCancel.bind(signals);
    let dropped = 0;
    signals.subagentRunsToCancel = () => void dropped++;
    try {
      const sid = await createSession(t, member, { agent_id: 'desk' });
      const slow = script([{ sleep_ms: 120_000, text: 'too late' }]);
      const res = await startRun(t, member, sid, {
        input: userInput(
          script([
            { tool_calls: [{ name: 'create_subagent', arguments: { name: 's1', instructions: slow } }, { name: 'create_subagent', arguments: { name: 's2', instructions: slow } }] },
            { tool_calls: [{ name: 'wait_for_subagents', arguments: {} }] },
          ]),
        ),
      });
      await waitForRun(t, member, res.body.run_id, (r) => r.status === 'waiting_for_subagents', 60_000);
      const children = (await runEvents(t, member, res.body.run_id)).filter((e) => e.type === 'subagent.created').map((e) => e.data.run_id);
      expect(children).toHaveLength(2);
      for (const c of children) await waitForRun(t, member, c, (r) => r.status === 'running');
      expect((await t.call(member, 'POST', `/v1/runs/${res.body.run_id}/cancel`)).status).toBe(202);
      expect((await waitForRun(t, member, res.body.run_id, isTerminal)).status).toBe('cancelled');
      expect(dropped).toBe(1);
      // Without the signal the children would sleep on for two minutes: the sweep cancels them.
      for (const c of children) expect((await waitForRun(t, member, c, isTerminal, 20_000)).status).toBe('cancelled');
    } finally {
      signals.subagentRunsToCancel = cascade;
    }
  }, 120_000);
});
