import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';
import { isTerminal, script, startRun, userInput, waitForRun } from '../helpers/runs';

/**
 * CONTRACT section 7 (issue 28): a queued run executes with the configuration frozen when it was
 * accepted (agent version, model, limits), and its owner's access is checked again as it starts.
 */
describe('frozen configuration and access re-checked when a queued run starts', () => {
  let t: TestApp;
  let dir: string;
  const approval = script([{ tool_calls: [{ name: 'create_ticket', arguments: { subject: 'x', body: 'y' } }] }, { text: 'done' }]);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'frozen-'));
    const file = join(dir, 'models.json');
    // Two scripted models told apart by their price: a free one and a priced one.
    writeFileSync(
      file,
      JSON.stringify([
        { id: 'scripted', provider: 'scripted', model: 'scripted', price: { input_per_mtok: 0, output_per_mtok: 0, cached_input_per_mtok: 0 } },
        { id: 'scripted-premium', provider: 'scripted', model: 'scripted', price: { input_per_mtok: 1000, output_per_mtok: 1000, cached_input_per_mtok: 1000 } },
      ]),
    );
    t = await startTestApp({ MODELS_FILE: file });
  }, 120_000);
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a queued run keeps the agent version, model and limits it was accepted with, when the agent gets a new version and the session a new model in between', async () => {
    const admin = KEYS.adminA;
    const agentId = `frozen_${Date.now()}`;
    const created = await t.call(admin, 'POST', '/v1/agents', { id: agentId, model: 'scripted', instructions: 'v1', tools: ['create_ticket', 'get_time'] });
    expect(created.status).toBe(201);
    const s = await t.call(admin, 'POST', '/v1/sessions', { agent_id: agentId });
    const sid = s.body.id;
    expect(s.body.agent).toMatchObject({ id: agentId, version: '1', model: 'scripted' });
    const blocker = await startRun(t, admin, sid, { input: userInput(approval) });
    await waitForRun(t, admin, blocker.body.run_id, (r) => r.status === 'waiting_for_approval');
    const queued = await startRun(t, admin, sid, { input: userInput(script([{ text: 'frozen' }])), concurrency: 'enqueue', limits: { max_steps: 3 } });
    expect(queued.body.receipt).toMatchObject({ disposition: 'queued' });
    // In between: a new agent version on the priced model, and the session moved to it.
    const v2 = await t.call(admin, 'POST', `/v1/agents/${agentId}/versions`, { model: 'scripted-premium', instructions: 'v2', tools: ['get_time'] });
    expect(v2.status).toBe(201);
    expect(v2.body.version).toBe('2');
    const moved = await t.call(admin, 'POST', `/v1/sessions/${sid}`, { agent: { model: 'scripted-premium' } });
    expect(moved.status).toBe(200);
    expect(moved.body.agent.model).toBe('scripted-premium');
    await t.call(admin, 'POST', `/v1/runs/${blocker.body.run_id}/cancel`, {});
    const run = await waitForRun(t, admin, queued.body.run_id, isTerminal);
    expect(run).toMatchObject({ status: 'completed', model: 'scripted', agent: { id: agentId, version: '1' }, limits: { max_steps: 3 } });
    // It ran on the free model: nothing was charged.
    expect(Number(run.usage.estimated_cost.amount)).toBe(0);
    expect(run.usage.model_calls).toBe(1);
    // A run accepted after the change runs on the priced model.
    const after = await startRun(t, admin, sid, { input: userInput(script([{ text: 'priced' }])) });
    const priced = await waitForRun(t, admin, after.body.run_id, isTerminal);
    expect(priced).toMatchObject({ status: 'completed', model: 'scripted-premium' });
    expect(Number(priced.usage.estimated_cost.amount)).toBeGreaterThan(0);
  });

  it("a queued run whose owner's key was revoked before it started fails access_revoked (no model call; audited; its input rejected)", async () => {
    const member = KEYS.memberA2;
    const s = await t.call(member, 'POST', '/v1/sessions', {});
    const sid = s.body.id;
    const blocker = await startRun(t, member, sid, { input: userInput(approval) });
    await waitForRun(t, member, blocker.body.run_id, (r) => r.status === 'waiting_for_approval');
    const queued = await startRun(t, member, sid, { input: userInput(script([{ text: 'never' }])), concurrency: 'enqueue' });
    expect(queued.body.receipt.disposition).toBe('queued');
    // The key is removed (what API_KEYS without it does at the next start-up of any node).
    const db = t.app.get(DataSource);
    await db.query(`DELETE FROM api_keys WHERE tenant_id = 'tenant_a' AND subject_id = 'user_a2'`);
    // The tenant's admin cancels the waiting run: the queued one is due to start.
    await t.call(KEYS.adminA, 'POST', `/v1/runs/${blocker.body.run_id}/cancel`, {});
    const run = await waitForRun(t, KEYS.adminA, queued.body.run_id, isTerminal);
    expect(run).toMatchObject({ status: 'failed', error: { code: 'access_revoked' }, step_count: 0, usage: { model_calls: 0 } });
    const receipt = await t.call(KEYS.adminA, 'GET', `/v1/inputs/${queued.body.receipt.id}`);
    expect(receipt.body).toMatchObject({ disposition: 'rejected', run_id: queued.body.run_id, taken_at: null });
    // Audited: its run.finished with the error is in the audit trail.
    const until = Date.now() + 20000;
    for (;;) {
      const audit = await t.call(KEYS.adminA, 'GET', `/v1/admin/audit?run_id=${queued.body.run_id}&limit=100`);
      const finished = audit.body.data?.find((r: any) => r.action === 'run_event.run.finished');
      if (finished) {
        expect(JSON.stringify(finished)).toContain('access_revoked');
        break;
      }
      if (Date.now() > until) throw new Error('no audit record of the run.finished');
      await new Promise((r) => setTimeout(r, 100));
    }
  });
});
