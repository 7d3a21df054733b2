import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { RUN_EVENT_TYPES } from '../../src/modules/events/domain/run-event';
import { createSession, isTerminal, runEvents, script, startRun, userInput, waitForRun } from '../helpers/runs';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/** The event types and their `data` fields of the contract's events section (section 8). */
const CONTRACT_EVENTS: Record<string, string[]> = {
  'run.started': ['status'],
  'run.waiting': ['status', 'reason'],
  'run.resumed': ['status'],
  'run.cancel_requested': ['requested_by'],
  'run.input': ['message_id'],
  'run.input_requested': ['question', 'tool_call_id', 'expires_at'],
  'agent.handoff': ['from_agent', 'to_agent', 'reason', 'tool_call_id'],
  'subagent.created': ['subagent_id', 'name', 'agent_id', 'run_id', 'tool_call_id'],
  'subagent.completed': ['subagent_id', 'run_id', 'status'],
  'subagent.closed': ['subagent_id'],
  'message.started': ['message_id', 'role'],
  'message.delta': ['message_id', 'content_index', 'delta'],
  'message.completed': ['message_id', 'content'],
  'tool.requested': ['tool_call_id', 'tool_name', 'arguments', 'risk'],
  'tool.started': ['tool_call_id', 'tool_name', 'attempt'],
  'tool.completed': ['tool_call_id', 'tool_name', 'result', 'duration_ms'],
  'tool.failed': ['tool_call_id', 'tool_name', 'error', 'duration_ms'],
  'approval.requested': ['approval_id', 'tool_call_id', 'tool_name', 'arguments', 'risk', 'expires_at'],
  'approval.accepted': ['approval_id', 'tool_call_id', 'decided_by', 'reason'],
  'approval.rejected': ['approval_id', 'tool_call_id', 'decided_by', 'reason'],
  usage: ['input_tokens', 'output_tokens', 'cached_input_tokens', 'reasoning_tokens', 'estimated_cost', 'model_calls', 'tool_calls'],
  'run.finished': ['status', 'final_message_id', 'termination_reason', 'error', 'usage'],
};
/** Fields that only some events of a type carry (documented, not required). */
const OPTIONAL_FIELDS: Record<string, string[]> = {
  // Only on a parent's stream, for an approval inside a subagent (CONTRACT 16).
  'approval.requested': ['run_id', 'subagent_id'],
  // Only on a subagent's run its parent cancelled (issue 48).
  'run.cancel_requested': ['reason'],
};

/** Object schemas with listed properties get `additionalProperties: false`: an undocumented field fails. */
function strict(node: any): any {
  if (Array.isArray(node)) return node.map(strict);
  if (!node || typeof node !== 'object') return node;
  const out: any = {};
  for (const [k, v] of Object.entries(node)) out[k] = k === 'example' || k === 'examples' ? v : strict(v);
  if (out.properties && out.additionalProperties === undefined) out.additionalProperties = false;
  return out;
}

/**
 * The event and content-part schemas of /docs-json are exact: their type list is the contract's,
 * each `data` schema names the contract's fields, and every event and message that real runs
 * produce (approvals, rejections, client tools, failures, cancels, limits; admin and member
 * views) validates against them with undocumented fields forbidden.
 */
describe('OpenAPI: event and content-part schemas match what the service sends', () => {
  let t: TestApp;
  let doc: any;
  let validateEvent: (e: unknown) => boolean;
  let validateMessage: (m: unknown) => boolean;
  let ajv: Ajv;

  beforeAll(async () => {
    t = await startTestApp();
    doc = (await t.call(null, 'GET', '/docs-json')).body;
    ajv = new Ajv({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema({ $id: 'openapi', components: strict(doc.components) });
    validateEvent = ajv.compile({ $ref: 'openapi#/components/schemas/RunEvent' });
    validateMessage = ajv.compile({ $ref: 'openapi#/components/schemas/MessageResponseDto' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it("documents exactly the contract's event types, each with the contract's data fields, under a discriminator on type", () => {
    const union = doc.components.schemas.RunEvent;
    expect(union.discriminator.propertyName).toBe('type');
    const mapping = union.discriminator.mapping as Record<string, string>;
    expect(Object.keys(mapping).sort()).toEqual(Object.keys(CONTRACT_EVENTS).sort());
    // The code's list is the contract's (run.input may still be missing from this build).
    expect([...new Set([...RUN_EVENT_TYPES, 'run.input'])].sort()).toEqual(Object.keys(CONTRACT_EVENTS).sort());
    expect(union.oneOf.map((o: any) => o.$ref).sort()).toEqual(Object.values(mapping).sort());
    for (const [type, fields] of Object.entries(CONTRACT_EVENTS)) {
      const event = doc.components.schemas[mapping[type].split('/').pop()!];
      expect({ type, enum: event.properties.type.enum }).toEqual({ type, enum: [type] });
      let data = event.properties.data;
      while (data.$ref) data = doc.components.schemas[data.$ref.split('/').pop()];
      expect({ type, fields: Object.keys(data.properties).sort() }).toEqual({ type, fields: [...fields, ...(OPTIONAL_FIELDS[type] ?? [])].sort() });
      expect({ type, required: [...data.required].sort() }).toEqual({ type, required: [...fields].sort() });
    }
    const parts = doc.components.schemas.ContentPart;
    expect(parts.discriminator.propertyName).toBe('type');
    expect(Object.keys(parts.discriminator.mapping).sort()).toEqual(['attachment_ref', 'text', 'tool_call', 'tool_result']);
  });

  it('every event and message of real runs validates (admin and member views)', async () => {
    const key = KEYS.memberA1;
    const session = await createSession(t, key);
    const runs: string[] = [];
    const start = async (text: string, extra: Record<string, unknown> = {}) => {
      const r = await startRun(t, key, session, { input: userInput(text), ...extra });
      expect(r.status).toBe(202);
      runs.push(r.body.run_id);
      return r.body.run_id as string;
    };
    const decideFirst = async (runId: string, decision: string) => {
      await waitForRun(t, key, runId, (r) => r.status === 'waiting_for_approval');
      const a = await t.call(key, 'GET', `/v1/runs/${runId}/approvals`);
      const d = await t.call(key, 'POST', `/v1/runs/${runId}/approvals/${a.body.data[0].id}`, { decision, reason: decision === 'reject' ? 'no' : null });
      expect(d.status).toBe(200);
    };
    const done = (runId: string) => waitForRun(t, key, runId, isTerminal);

    // Approve, and reject.
    let id = await start('Where is my order O-1001?');
    await decideFirst(id, 'approve');
    expect((await done(id)).status).toBe('completed');
    id = await start('Where is my order O-1001?');
    await decideFirst(id, 'reject');
    await done(id);
    // A private client tool, answered with an output and with an error.
    for (const answer of [{ output: { name: 'Ada', password: 'x' } }, { error: { code: 'tool_failed', message: 'not found' } }]) {
      id = await start(script([{ tool_calls: [{ name: 'lookup_customer', arguments: { email: 'ada@example.com' } }] }, { text: 'ok' }]));
      const waiting = await waitForRun(t, key, id, (r) => r.status === 'waiting_for_tool');
      const callId = waiting.pending_tool_calls[0].tool_call_id;
      expect((await t.call(key, 'POST', `/v1/runs/${id}/tool_outputs`, { tool_outputs: [{ tool_call_id: callId, ...answer }] })).status).toBe(200);
      await done(id);
    }
    // A failing server tool (retries, then tool.failed), a model error, a limit, a cancel.
    id = await start(script([{ tool_calls: [{ name: 'flaky_tool', arguments: { fail_times: 9 } }] }, { text: 'gave up' }]));
    await done(id);
    id = await start(script([{ error: { code: 'model_timeout' } }]));
    expect((await done(id)).status).toBe('failed');
    id = await start(script([{ tool_calls: [{ name: 'get_time', arguments: {} }] }, { tool_calls: [{ name: 'get_time', arguments: {} }] }]), { limits: { max_steps: 1 } });
    expect((await done(id)).status).toBe('terminated');
    id = await start(script([{ tool_calls: [{ name: 'slow_tool', arguments: { ms: 5000 } }] }]));
    await waitForRun(t, key, id, (r) => r.status === 'running' && r.step_count >= 1);
    expect([200, 202]).toContain((await t.call(key, 'POST', `/v1/runs/${id}/cancel`)).status);
    expect((await done(id)).status).toBe('cancelled');
    // ask_user (CONTRACT 17): run.input_requested and waiting_for_input, answered by the next input (the same run).
    id = await start(script([{ tool_calls: [{ name: 'ask_user', arguments: { question: 'Which one?' } }] }, { text: 'thanks' }]));
    await waitForRun(t, key, id, (r) => r.status === 'waiting_for_input');
    const answer = await startRun(t, key, session, { input: userInput('the first one') });
    expect(answer.body).toMatchObject({ run_id: id, answered: true });
    expect((await done(id)).status).toBe('completed');
    // A handoff (CONTRACT 16): agent.handoff, in a session of an agent that lists its target.
    const router = await t.call(KEYS.adminA, 'POST', '/v1/agents', { id: 'events_router', tools: [], handoffs: ['assistant'] });
    expect(router.status).toBe(201);
    const routed = await t.call(key, 'POST', '/v1/sessions', { agent_id: 'events_router' });
    const handoff = await startRun(t, key, routed.body.id, { input: userInput(script([{ tool_calls: [{ name: 'transfer_to_assistant', arguments: { reason: 'weather' } }] }, { text: 'hi' }])) });
    runs.push(handoff.body.run_id);
    expect((await done(handoff.body.run_id)).status).toBe('completed');
    // Subagents (CONTRACT 16): subagent.created, .completed (after the wait) and .closed.
    const lead = await t.call(KEYS.adminA, 'POST', '/v1/agents', { id: 'events_lead', tools: [], subagents: { enabled: true } });
    expect(lead.status).toBe(201);
    const led = await t.call(key, 'POST', '/v1/sessions', { agent_id: 'events_lead' });
    const spawn = await startRun(t, key, led.body.id, {
      input: userInput(
        script([
          { tool_calls: [{ name: 'create_subagent', arguments: { name: 'c', instructions: script([{ text: 'child' }]) } }] },
          { tool_calls: [{ name: 'wait_for_subagents', arguments: {} }] },
          { tool_calls: [{ name: 'close_subagent', arguments: { subagent_id: 'c' } }] },
          { text: 'bye' },
        ]),
      ),
    });
    runs.push(spawn.body.run_id);
    expect((await done(spawn.body.run_id)).status).toBe('completed');

    const seen = new Set<string>();
    const problems: unknown[] = [];
    for (const viewer of [key, KEYS.adminA]) {
      for (const runId of runs) {
        for (const e of await runEvents(t, viewer, runId)) {
          seen.add(e.type);
          if (!validateEvent(e)) {
            // The union's errors list every branch: report the branch of the event's own type.
            const own = ajv.getSchema(`openapi#/components/schemas/${doc.components.schemas.RunEvent.discriminator.mapping[e.type]?.split('/').pop()}`);
            own?.(e);
            problems.push({ viewer, type: e.type, data: e.data, errors: own ? ajv.errorsText(own.errors) : 'undocumented type' });
          }
        }
      }
      const messages = await t.call(viewer, 'GET', `/v1/sessions/${session}/messages?limit=100`);
      expect(messages.body.data.length).toBeGreaterThan(10);
      for (const m of messages.body.data) if (!validateMessage(m)) problems.push({ viewer, message: m.id, content: m.content, errors: ajv.errorsText(ajvErrors(validateMessage)) });
    }
    expect(problems).toEqual([]);
    // Every type the service emits was exercised (run.input needs a steered input).
    expect([...RUN_EVENT_TYPES].filter((ty) => ty !== ('run.input' as string) && !seen.has(ty))).toEqual([]);
  }, 120_000);
});

function ajvErrors(v: unknown): Parameters<Ajv['errorsText']>[0] {
  return (v as { errors?: Parameters<Ajv['errorsText']>[0] }).errors;
}
