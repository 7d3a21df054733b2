import OpenAI, { BadRequestError, NotFoundError } from 'openai';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';
import { script } from '../helpers/runs';
import { openSse, SseEvent } from '../helpers/sse-client';

/**
 * CONTRACT section 15: the official `openai` SDK (7.55, `client.beta.agents`) against the running
 * app on `/openai/v1`, over the native sessions, runs, messages and event stream.
 */
describe('OpenAI Agents API (beta) with the official openai SDK', () => {
  let t: TestApp;
  let client: OpenAI;
  const key = KEYS.memberA1;

  beforeAll(async () => {
    t = await startTestApp({ SSE_KEEPALIVE_MS: '1000' });
    client = new OpenAI({ baseURL: `${t.url}/openai/v1`, apiKey: key, maxRetries: 0 });
  });
  afterAll(async () => {
    await t.close();
  });

  const sessions = () => client.beta.agents.sessions;
  const create = (agent_id = 'assistant'): Promise<any> => sessions().create({ agent_id, environment: { type: 'none' } });
  const message = (text: string) => ({ type: 'agent.session.input.message' as const, input: [{ role: 'user' as const, content: [{ type: 'input_text' as const, text }] }] });

  async function waitIdle(id: string, ms = 20000): Promise<any> {
    const until = Date.now() + ms;
    for (;;) {
      const s = await sessions().retrieve(id);
      if (s.status === 'idle') return s;
      if (Date.now() > until) throw new Error(`session ${id} is still ${s.status}`);
      await new Promise((r) => setTimeout(r, 30));
    }
  }

  /** Reads SDK stream events until the turn's terminal event and the session.idle after it. */
  async function untilIdle(stream: AsyncIterable<any>, onEvent?: (e: any) => Promise<void> | void): Promise<any[]> {
    const seen: any[] = [];
    let ended = false;
    for await (const e of stream) {
      seen.push(e);
      await onEvent?.(e);
      if (['agent.session.turn.completed', 'agent.session.turn.failed', 'agent.session.turn.cancelled'].includes(e.type)) ended = true;
      if (ended && e.type === 'agent.session.idle') break;
    }
    return seen;
  }

  it('creates a session (Unix-second timestamps), visible through /v1 and back', async () => {
    const s: any = await create();
    expect(s).toMatchObject({ object: 'agent.session', status: 'idle', required_actions: [], environment: { type: 'none' }, agent: { id: 'assistant' } });
    expect(s.id).toMatch(/^sess_/);
    expect(Number.isInteger(s.created_at)).toBe(true);
    expect(Math.abs(s.created_at - Date.now() / 1000)).toBeLessThan(60);
    expect((await t.call(key, 'GET', `/v1/sessions/${s.id}`)).status).toBe(200);
    const native = await t.call(key, 'POST', '/v1/sessions', { agent_id: 'assistant' });
    expect((await sessions().retrieve(native.body.id)).id).toBe(native.body.id);
    const listed: string[] = [];
    for await (const x of sessions().list({ limit: 1 })) listed.push(x.id);
    expect(listed).toEqual(expect.arrayContaining([s.id, native.body.id]));
    expect(new Set(listed).size).toBe(listed.length);
    const updated: any = await sessions().update(s.id, { metadata: { channel: 'sdk' } });
    expect(updated.metadata).toEqual({ channel: 'sdk' });
    expect((await t.call(key, 'GET', `/v1/sessions/${s.id}`)).body.metadata).toEqual({ channel: 'sdk' });
    const agents: string[] = [];
    for await (const a of client.beta.agents.list()) agents.push(a.id);
    expect(agents).toEqual(expect.arrayContaining(['assistant', 'support_agent']));
    expect((await client.beta.agents.retrieve('support_agent')).tools.map((x: any) => x.name)).toContain('lookup_customer');
    const deleted: any = await sessions().delete(native.body.id);
    expect(deleted).toMatchObject({ id: native.body.id, deleted: true });
    expect((await t.call(key, 'GET', `/v1/sessions/${native.body.id}`)).status).toBe(404);
  });

  it('sessions.stream(id, {input}).finalResult() returns the agent answer', async () => {
    const s = await create();
    const result = await sessions()
      .stream(s.id, { input: script([{ text: 'Hello from the agent, in pieces.', chunk_size: 4 }]) })
      .finalResult();
    expect(result.output_text).toBe('Hello from the agent, in pieces.');
    expect(result.session_id).toBe(s.id);
    expect(result.turn_id).toMatch(/^run_/);
    expect((await t.call(key, 'GET', `/v1/runs/${result.turn_id}`)).body.status).toBe('completed');
    expect((await sessions().retrieve(s.id)).status).toBe('idle');
  });

  it('a client function tool is answered by toolHandlers', async () => {
    // lookup_customer is a private tool: members see its arguments redacted, as on /v1; an admin key sees them.
    const admin = new OpenAI({ baseURL: `${t.url}/openai/v1`, apiKey: KEYS.adminA, maxRetries: 0 }).beta.agents.sessions;
    const s: any = await admin.create({ agent_id: 'support_agent', environment: { type: 'none' } });
    const calls: unknown[] = [];
    const result = await admin
      .stream(s.id, {
        input: script([{ text: 'Looking the customer up.', tool_calls: [{ name: 'lookup_customer', arguments: { email: 'ada@example.com' } }] }, { text: 'Ada is a gold customer.' }]),
        toolHandlers: {
          lookup_customer: async (args: any) => {
            calls.push(args);
            return { name: 'Ada Lovelace', tier: 'gold' };
          },
        } as never,
      })
      .finalResult();
    expect(calls).toEqual([{ email: 'ada@example.com' }]);
    expect(result.output_text).toBe('Ada is a gold customer.');
    const items: any[] = [];
    for await (const it of admin.turns.items.list(result.turn_id, { session_id: s.id })) items.push(it);
    const call = items.find((i) => i.type === 'function_call');
    expect(call).toMatchObject({ name: 'lookup_customer', turn_id: result.turn_id });
    const out = items.find((i) => i.type === 'function_call_output');
    expect(out).toMatchObject({ call_id: call.call_id, status: 'completed' });
    expect(JSON.parse(out.output)).toEqual({ name: 'Ada Lovelace', tier: 'gold' });
  });

  it('sessions.events.stream + events.create start a second turn, in the order the SDK expects', async () => {
    const s = await create();
    await sessions().stream(s.id, { input: script([{ text: 'first' }]) }).finalResult();
    const stream = await sessions().events.stream(s.id);
    await sessions().events.create(s.id, { events: [message(script([{ text: 'second answer', chunk_size: 3 }]))] });
    const events = await untilIdle(stream);
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('agent.session.turn.created'); // live from now: nothing of the first turn
    expect(events[0].turn).toMatchObject({ subagent_id: null, session_id: s.id, object: 'agent.session.turn' });
    const turnId = events[0].turn_id;
    expect(types.slice(0, 3)).toEqual(['agent.session.turn.created', 'agent.session.turn.in_progress', 'agent.session.in_progress']);
    expect(types.slice(-2)).toEqual(['agent.session.turn.completed', 'agent.session.idle']);
    const deltas = events.filter((e) => e.type === 'agent.session.turn.output_text.delta').map((e) => e.delta).join('');
    expect(deltas).toBe('second answer');
    const done = events.find((e) => e.type === 'agent.session.turn.item.done' && e.item.type === 'message');
    expect(done.item).toMatchObject({ role: 'assistant', status: 'completed', phase: 'final_answer', content: [{ type: 'output_text', text: 'second answer' }], turn_id: turnId });
    expect(types.indexOf('agent.session.turn.item.added')).toBeLessThan(types.indexOf('agent.session.turn.item.done'));
    expect(new Set(events.map((e) => e.event_id)).size).toBe(events.length);
    expect(events.find((e) => e.type === 'agent.session.turn.completed').turn.status).toBe('completed');
    expect(events[events.length - 1].session.status).toBe('idle');
  });

  it('input while a turn is active steers it (no second turn)', async () => {
    const s = await create();
    const stream = await sessions().events.stream(s.id);
    await sessions().events.create(s.id, { events: [message(script([{ text: 'a'.repeat(40), chunk_size: 2, delay_ms: 25 }]))] });
    let steered = false;
    const events = await untilIdle(stream, async (e) => {
      if (!steered && e.type === 'agent.session.turn.output_text.delta') {
        steered = true;
        await sessions().events.create(s.id, { events: [message(script([{ text: 'steered answer' }]))] });
      }
    });
    expect(steered).toBe(true);
    if (process.env.DEBUG_I17) console.log(JSON.stringify(events.map((e) => [e.type, e.turn?.status, e.turn?.error, e.item?.content, e.delta])));
    expect(events.filter((e) => e.type === 'agent.session.turn.created')).toHaveLength(1);
    const answers = events.filter((e) => e.type === 'agent.session.turn.item.done' && e.item.type === 'message').map((e) => e.item.content[0].text);
    expect(answers).toEqual(['a'.repeat(40), 'steered answer']);
    const turns: any[] = [];
    for await (const x of sessions().turns.list(s.id)) turns.push(x);
    expect(turns).toHaveLength(1);
    expect(turns[0].status).toBe('completed');
  });

  it('cancel during a slow tool: the turn ends cancelled only after the tool stopped', async () => {
    const s = await create();
    const stream = await sessions().events.stream(s.id);
    await sessions().events.create(s.id, { events: [message(script([{ tool_calls: [{ name: 'slow_tool', arguments: { ms: 1500 } }] }, { text: 'never' }]))] });
    let cancelledAt = 0;
    const events = await untilIdle(stream, async (e) => {
      if (!cancelledAt && e.type === 'agent.session.turn.item.added' && e.item.type === 'function_call') {
        await new Promise((r) => setTimeout(r, 300));
        await sessions().events.create(s.id, { events: [{ type: 'agent.session.input.cancel' }] });
        cancelledAt = Date.now();
      }
    });
    const types = events.map((e) => e.type);
    expect(types.slice(-2)).toEqual(['agent.session.turn.cancelled', 'agent.session.idle']);
    const callDone = events.findIndex((e) => e.type === 'agent.session.turn.item.done' && e.item.type === 'function_call');
    expect(callDone).toBeGreaterThan(-1);
    expect(callDone).toBeLessThan(types.indexOf('agent.session.turn.cancelled'));
    expect(events.some((e) => e.type === 'agent.session.turn.item.done' && e.item.type === 'message' && e.item.content[0]?.text === 'never')).toBe(false);
    const turn = await sessions().turns.retrieve(events[0].turn_id, { session_id: s.id });
    expect(turn.status).toBe('cancelled');
    expect(turn.completed_at).not.toBeNull();
  });

  it('approvals (our extension): a requires_action approval_request, answered by agent.session.input.approval_result', async () => {
    const s = await create('support_agent');
    const stream = await sessions().events.stream(s.id);
    await sessions().events.create(s.id, { events: [message('Where is my order O-1001?')] });
    let decided: any = null;
    const events = await untilIdle(stream, async (e) => {
      if (!decided && e.type === 'agent.session.requires_action') {
        decided = e.session.required_actions[0];
        expect((await sessions().retrieve(s.id)).required_actions).toEqual(e.session.required_actions);
        await sessions().events.create(s.id, {
          events: [{ type: 'agent.session.input.approval_result', approval_id: decided.approval_id, decision: 'approve', reason: 'ok' } as never],
        });
      }
    });
    expect(decided).toMatchObject({ type: 'approval_request', name: 'create_ticket', turn_id: events[0].turn_id });
    expect(decided.approval_id).toMatch(/^apr_/);
    expect(decided.call_id).toMatch(/^call_/);
    expect(events.slice(-2).map((e) => e.type)).toEqual(['agent.session.turn.completed', 'agent.session.idle']);
    const out = events.find((e) => e.type === 'agent.session.turn.item.done' && e.item.type === 'function_call_output' && e.item.call_id === decided.call_id);
    expect(out.item.status).toBe('completed');
    const bad: any = await sessions()
      .events.create(s.id, { events: [{ type: 'agent.session.input.approval_result', approval_id: decided.approval_id, decision: 'approve' } as never] })
      .catch((e) => e);
    expect(bad).toBeInstanceOf(BadRequestError);
  });

  it('turns and items: after/limit/order pages and the auto-paginating iterators', async () => {
    const s = await create('support_agent');
    const ids: string[] = [];
    for (const text of ['one', 'two', 'three']) {
      ids.push((await sessions().stream(s.id, { input: script([{ text }]) }).finalResult()).turn_id);
    }
    const page = await sessions().turns.list(s.id, { limit: 1, order: 'asc' });
    expect(page.data.map((x) => x.id)).toEqual([ids[0]]);
    expect(page.has_more).toBe(true);
    const asc: string[] = [];
    for await (const x of sessions().turns.list(s.id, { limit: 1, order: 'asc' })) asc.push(x.id);
    expect(asc).toEqual(ids);
    const desc: string[] = [];
    for await (const x of sessions().turns.list(s.id, { limit: 2 })) desc.push(x.id);
    expect(desc).toEqual([...ids].reverse());
    const after = await sessions().turns.list(s.id, { after: ids[0], order: 'asc' });
    expect(after.data.map((x) => x.id)).toEqual(ids.slice(1));

    const all = (await sessions().items.list(s.id, { limit: 100, order: 'asc' })).data;
    expect(all).toHaveLength(6); // three user messages, three answers
    expect(all.map((i: any) => i.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user', 'assistant']);
    const paged: string[] = [];
    for await (const i of sessions().items.list(s.id, { limit: 2, order: 'asc' })) paged.push(i.id!);
    expect(paged).toEqual(all.map((i: any) => i.id));
    const reversed: string[] = [];
    for await (const i of sessions().items.list(s.id, { limit: 4, order: 'desc' })) reversed.push(i.id!);
    expect(reversed).toEqual(all.map((i: any) => i.id).reverse());
    const turnItems: any[] = [];
    for await (const i of sessions().turns.items.list(ids[1], { session_id: s.id, limit: 1, order: 'asc' })) turnItems.push(i);
    expect(turnItems.map((i) => [i.role, i.content[0].text])).toEqual([
      ['user', script([{ text: 'two' }])],
      ['assistant', 'two'],
    ]);
  });

  it('items page by keyset over messages that give several items: SDK iterators with a small limit, both orders, after from the middle', async () => {
    const s = await create();
    const turn = (i: number) =>
      script([{ text: `Checking ${i}.`, tool_calls: [{ name: 'get_time', arguments: {} }, { name: 'get_weather', arguments: { location: `City ${i}` } }] }, { text: `Answer ${i}.` }]);
    const turnIds: string[] = [];
    for (let i = 0; i < 3; i++) turnIds.push((await sessions().stream(s.id, { input: turn(i) }).finalResult()).turn_id);
    // Per turn 5 messages (user, assistant with text and two calls, two tool results, answer) give 7 items.
    const native = (await t.call(key, 'GET', `/v1/sessions/${s.id}/messages?limit=100`)).body.data as any[];
    expect(native.map((m) => m.role)).toEqual(Array(3).fill(['user', 'assistant', 'tool', 'tool', 'assistant']).flat());
    // The native list they are read from pages by keyset both ways (the query the items pages run).
    for (const order of ['asc', 'desc'] as const) {
      const walked: string[] = [];
      for (let after = ''; ; ) {
        const p = (await t.call(key, 'GET', `/v1/sessions/${s.id}/messages?limit=4&order=${order}${after ? `&after=${after}` : ''}`)).body;
        walked.push(...p.data.map((m: any) => m.id));
        if (!p.has_more) break;
        after = p.last_id;
      }
      expect(walked).toEqual(order === 'asc' ? native.map((m) => m.id) : native.map((m) => m.id).reverse());
    }

    const asc: any[] = [];
    for await (const i of sessions().items.list(s.id, { limit: 4, order: 'asc' })) asc.push(i);
    expect(asc).toHaveLength(21);
    expect(new Set(asc.map((i) => i.id)).size).toBe(21);
    expect(asc.slice(0, 7).map((i) => i.type)).toEqual(['message', 'message', 'function_call', 'function_call', 'function_call_output', 'function_call_output', 'message']);
    // Ids are positions: the message id, or the message and content part holding a call or its output.
    const ulidOf = (id: string) => id.slice('msg_'.length);
    expect(asc.slice(0, 7).map((i) => i.id)).toEqual([
      native[0].id,
      native[1].id,
      `fc_${ulidOf(native[1].id)}_1`,
      `fc_${ulidOf(native[1].id)}_2`,
      `fco_${ulidOf(native[2].id)}_0`,
      `fco_${ulidOf(native[3].id)}_0`,
      native[4].id,
    ]);
    expect([asc[4].call_id, asc[5].call_id]).toEqual([asc[2].call_id, asc[3].call_id]);
    expect(asc.map((i) => i.turn_id)).toEqual(turnIds.flatMap((id) => Array(7).fill(id)));

    const desc: string[] = [];
    for await (const i of sessions().items.list(s.id, { limit: 4, order: 'desc' })) desc.push(i.id!);
    expect(desc).toEqual(asc.map((i) => i.id).reverse());
    // The SDK's documented default order (desc, newest first) holds on this server.
    const byDefault: string[] = [];
    for await (const i of sessions().items.list(s.id, { limit: 5 })) byDefault.push(i.id!);
    expect(byDefault).toEqual(asc.map((i) => i.id).reverse());

    // after from the middle of a message (its first function call), both orders.
    const mid = asc[9].id; // turn 2's first function call
    expect(mid).toBe(`fc_${ulidOf(native[6].id)}_1`);
    const fromMidAsc: string[] = [];
    for await (const i of sessions().items.list(s.id, { after: mid, limit: 3, order: 'asc' })) fromMidAsc.push(i.id!);
    expect(fromMidAsc).toEqual(asc.slice(10).map((i) => i.id));
    const fromMidDesc: string[] = [];
    for await (const i of sessions().items.list(s.id, { after: mid, limit: 3, order: 'desc' })) fromMidDesc.push(i.id!);
    expect(fromMidDesc).toEqual(asc.slice(0, 9).map((i) => i.id).reverse());
    // One page on the wire: the SDK's shape.
    const page = await t.call(key, 'GET', `/openai/v1/agents/sessions/${s.id}/items?after=${asc[3].id}&limit=5&order=asc`);
    expect(page.body).toMatchObject({ object: 'list', has_more: true, first_id: asc[4].id, last_id: asc[8].id });
    expect(page.body.data.map((i: any) => i.id)).toEqual(asc.slice(4, 9).map((i) => i.id));
    const last = await t.call(key, 'GET', `/openai/v1/agents/sessions/${s.id}/items?after=${asc[17].id}&limit=3&order=asc`);
    expect(last.body).toMatchObject({ has_more: false, last_id: asc[20].id });

    // A turn's items: only its own, in pages, both orders, after from the middle.
    const turnAsc: string[] = [];
    for await (const i of sessions().turns.items.list(turnIds[1], { session_id: s.id, limit: 2, order: 'asc' })) turnAsc.push(i.id!);
    expect(turnAsc).toEqual(asc.slice(7, 14).map((i) => i.id));
    const turnDesc: string[] = [];
    for await (const i of sessions().turns.items.list(turnIds[1], { session_id: s.id, limit: 2, order: 'desc' })) turnDesc.push(i.id!);
    expect(turnDesc).toEqual(asc.slice(7, 14).map((i) => i.id).reverse());
    const turnFromMid: string[] = [];
    for await (const i of sessions().turns.items.list(turnIds[1], { session_id: s.id, after: asc[11].id, limit: 2, order: 'desc' })) turnFromMid.push(i.id!);
    expect(turnFromMid).toEqual(asc.slice(7, 11).map((i) => i.id).reverse());

    // Not an item of the list: 400 with param "after" (another turn's item, a call id, a made-up position).
    for (const bad of [asc[0].id, asc[2].call_id, `fc_${ulidOf(native[0].id)}_0`]) {
      const err: any = await sessions()
        .turns.items.list(turnIds[1], { session_id: s.id, after: bad })
        .then((p) => p.data)
        .catch((e) => e);
      expect(err).toBeInstanceOf(BadRequestError);
      expect(err.param).toBe('after');
    }
    const foreign: any = await sessions()
      .items.list(s.id, { after: `msg_${'0'.repeat(26)}` })
      .then((p) => p.data)
      .catch((e) => e);
    expect(foreign).toBeInstanceOf(BadRequestError);
  });

  it('the event stream names function calls as the items list does', async () => {
    const s = await create();
    const stream = await sessions().events.stream(s.id);
    await sessions().events.create(s.id, { events: [message(script([{ text: 'Checking.', tool_calls: [{ name: 'get_time', arguments: {} }] }, { text: 'Done.' }]))] });
    const events = await untilIdle(stream);
    const streamed = events.filter((e) => e.type === 'agent.session.turn.item.done').map((e) => e.item);
    const listed = (await sessions().items.list(s.id, { limit: 100 })).data as any[];
    const call = listed.find((i) => i.type === 'function_call');
    expect(call.id).toMatch(/^fc_/);
    expect(streamed.find((i: any) => i.type === 'function_call')).toMatchObject({ id: call.id, call_id: call.call_id });
    for (const m of listed.filter((i) => i.type === 'message' && i.role === 'assistant')) expect(streamed.map((i: any) => i.id)).toContain(m.id);
    // An output streamed live names its call (the event does not name the tool message that lists it).
    expect(streamed.find((i: any) => i.type === 'function_call_output')).toMatchObject({ id: `out_${call.call_id}`, call_id: call.call_id });
  });

  it("items show members a private tool's arguments and result redacted, as /v1 does; admins see them", async () => {
    const s: any = await create('support_agent');
    await sessions()
      .stream(s.id, {
        input: script([{ text: 'Looking the customer up.', tool_calls: [{ name: 'lookup_customer', arguments: { email: 'ada@example.com' } }] }, { text: 'Found.' }]),
        toolHandlers: { lookup_customer: async () => ({ name: 'Ada Lovelace', tier: 'gold' }) } as never,
      })
      .finalResult();
    const admin = new OpenAI({ baseURL: `${t.url}/openai/v1`, apiKey: KEYS.adminA, maxRetries: 0 }).beta.agents.sessions;
    const asMember = (await sessions().items.list(s.id, { limit: 100 })).data as any[];
    const asAdmin = (await admin.items.list(s.id, { limit: 100 })).data as any[];
    expect(asMember.map((i) => i.id)).toEqual(asAdmin.map((i) => i.id));
    const pick = (items: any[], type: string) => items.find((i) => i.type === type);
    expect(pick(asAdmin, 'function_call').arguments).toContain('ada@example.com');
    expect(pick(asAdmin, 'function_call_output').output).toContain('Ada Lovelace');
    expect(pick(asMember, 'function_call').arguments).not.toContain('ada@example.com');
    expect(pick(asMember, 'function_call_output').output).not.toContain('Ada Lovelace');
    const nativeMember = (await t.call(key, 'GET', `/v1/sessions/${s.id}/messages`)).body.data as any[];
    const call = nativeMember.flatMap((m) => m.content).find((p: any) => p.type === 'tool_call');
    expect(pick(asMember, 'function_call').arguments).toBe(JSON.stringify(call.arguments));
  });

  it('a retried events.create with one Idempotency-Key starts one turn', async () => {
    const s = await create();
    const body = { events: [message(script([{ text: 'once' }]))], 'Idempotency-Key': `idem-${Date.now()}` };
    await sessions().events.create(s.id, body);
    await sessions().events.create(s.id, body);
    await waitIdle(s.id);
    const turns: any[] = [];
    for await (const x of sessions().turns.list(s.id)) turns.push(x);
    expect(turns).toHaveLength(1);
    expect((await t.call(key, 'GET', `/v1/sessions/${s.id}/runs`)).body.data).toHaveLength(1);
  });

  it("another tenant's session is 404 (NotFoundError)", async () => {
    const s = await create();
    const other = new OpenAI({ baseURL: `${t.url}/openai/v1`, apiKey: KEYS.memberB, maxRetries: 0 });
    await expect(other.beta.agents.sessions.retrieve(s.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(other.beta.agents.sessions.events.create(s.id, { events: [message('hi')] })).rejects.toBeInstanceOf(NotFoundError);
    await expect(other.beta.agents.sessions.turns.list(s.id).then((p) => p.data)).rejects.toBeInstanceOf(NotFoundError);
    const err: any = await other.beta.agents.sessions.events.stream(s.id).catch((e) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err.code).toBe('session_not_found');
  });

  it('an unsupported environment is 400 (BadRequestError) with a clear message and param', async () => {
    const err: any = await sessions()
      .create({ agent_id: 'assistant', environment: { type: 'openai_hosted' } } as never)
      .catch((e) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect(err.message).toMatch(/environment type "openai_hosted" is not supported.*\{"type":"none"\}/);
    expect(err.param).toBe('environment');
    expect(err.code).toBe('invalid_request');
  });

  it('a session with an inline agent carrying a function tool: finalResult() with toolHandlers answers it', async () => {
    const weather = {
      type: 'function' as const,
      name: 'city_forecast',
      description: 'The forecast for a city.',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
    };
    const s: any = await sessions().create({
      environment: { type: 'none' },
      agent: { model: 'scripted', instructions: 'Check the weather before answering.', tools: [weather], service_tier: 'default', reasoning: null },
      metadata: { channel: 'inline' },
    });
    expect(s.agent).toMatchObject({ name: null, model: 'scripted', instructions: 'Check the weather before answering.', tools: [{ type: 'function', name: 'city_forecast', parameters: weather.parameters }] });
    expect(s.agent.id).toMatch(/^inline_/);
    expect(s.status).toBe('idle');
    const calls: unknown[] = [];
    const result = await sessions()
      .stream(s.id, {
        input: script([{ text: 'Checking.', tool_calls: [{ name: 'city_forecast', arguments: { city: 'Paris' } }] }, { text: 'Sunny in Paris.' }]),
        toolHandlers: {
          city_forecast: async (args: any) => {
            calls.push(args);
            return { city: args.city, forecast: 'sunny' };
          },
        } as never,
      })
      .finalResult();
    expect(calls).toEqual([{ city: 'Paris' }]);
    expect(result.output_text).toBe('Sunny in Paris.');
    const items: any[] = [];
    for await (const it of sessions().turns.items.list(result.turn_id, { session_id: s.id })) items.push(it);
    const out = items.find((i) => i.type === 'function_call_output');
    expect(JSON.parse(out.output)).toEqual({ city: 'Paris', forecast: 'sunny' });
    // The native side pins the same configuration: the session's agent, its tools, a client tool call.
    const native = await t.call(key, 'GET', `/v1/sessions/${s.id}`);
    expect(native.body.agent).toMatchObject({ id: s.agent.id, version: '1', model: 'scripted' });
    const pinned = await t.call(key, 'GET', `/v1/agents/${s.agent.id}/versions/1`);
    expect(pinned.body.tools).toEqual([expect.objectContaining({ name: 'city_forecast', type: 'function', executor: 'client' })]);
    expect((await sessions().retrieve(s.id)).agent).toEqual(s.agent);
    // A first input at creation starts the turn, which waits for the client: a required action of type function_call.
    const started: any = await sessions().create({
      environment: { type: 'none' },
      agent: { model: 'scripted', tools: [weather] },
      input: script([{ tool_calls: [{ name: 'city_forecast', arguments: { city: 'Oslo' } }] }, { text: 'Snow.' }]),
    });
    const until = Date.now() + 20000;
    let waiting: any = started;
    while (waiting.status !== 'requires_action' && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 30));
      waiting = await sessions().retrieve(started.id);
    }
    expect(waiting.required_actions).toEqual([expect.objectContaining({ type: 'function_call', name: 'city_forecast', arguments: JSON.stringify({ city: 'Oslo' }) })]);
    const action = waiting.required_actions[0];
    await sessions().events.create(started.id, { events: [{ type: 'agent.session.input.tool_result', turn_id: action.turn_id, call_id: action.call_id, success: true, output: '{"forecast":"snow"}' }] as never });
    await waitIdle(started.id);
    expect((await t.call(key, 'GET', `/v1/runs/${action.turn_id}`)).body.status).toBe('completed');
  });

  it('multi_agent (CONTRACT 16): an inline agent fans out two subagents and waits; sessions.subagents, their turns and items, the four item types and the subagent events', async () => {
    const s: any = await sessions().create({
      environment: { type: 'none' },
      agent: { model: 'scripted', instructions: 'Delegate, then summarize.', multi_agent: { enabled: true, max_concurrent_subagents: 3 } },
    });
    expect(s.agent.multi_agent).toEqual({ enabled: true, max_concurrent_subagents: 3 });
    expect(s.agent.tools.map((x: any) => x.name)).toEqual(expect.arrayContaining(['create_subagent', 'send_subagent_input', 'wait_for_subagents', 'close_subagent']));
    expect((await client.beta.agents.retrieve('assistant')).multi_agent).toEqual({ enabled: false, max_concurrent_subagents: null });
    const stream = await sessions().events.stream(s.id);
    /** A subagent's own script: it works a little while its parent goes on, then answers. */
    const child = (text: string) => script([{ sleep_ms: 300, text }]);
    await sessions().events.create(s.id, {
      events: [
        message(
          script([
            {
              tool_calls: [
                { name: 'create_subagent', arguments: { name: 'north', instructions: child('north is clear') } },
                { name: 'create_subagent', arguments: { name: 'south', instructions: child('south is busy') } },
              ],
            },
            { tool_calls: [{ name: 'wait_for_subagents', arguments: { subagent_ids: ['north', 'south'] } }] },
            { tool_calls: [{ name: 'close_subagent', arguments: { subagent_id: 'north' } }] },
            { text: 'Both regions reported.' },
          ]),
        ),
      ],
    });
    const events = await untilIdle(stream);
    const turnId = events[0].turn_id;
    expect(events.find((e) => e.type === 'agent.session.turn.completed').turn).toMatchObject({ status: 'completed', subagent_id: null });
    // Waiting for its subagents, the turn asks nothing of the client.
    expect(events.filter((e) => e.type === 'agent.session.requires_action')).toEqual([]);
    const created = events.filter((e) => e.type === 'agent.session.subagent.created').map((e) => e.subagent);
    expect(created.map((x: any) => x.name)).toEqual(['north', 'south']);
    expect(created[0]).toEqual({
      id: expect.stringMatching(/^sess_/),
      closed_at: null,
      instructions: [{ type: 'output_text', text: child('north is clear') }],
      name: 'north',
      object: 'agent.session.subagent',
      opened_at: expect.any(Number),
      parent_agent_id: s.agent.id,
      session_id: s.id,
      status: 'active',
    });
    const [north, south] = created.map((x: any) => x.id);
    const closed = events.find((e) => e.type === 'agent.session.subagent.closed');
    expect(closed.subagent).toMatchObject({ id: north, name: 'north', status: 'closed', closed_at: expect.any(Number) });
    // The stream names the calls as the items list does: the SDK's item types, no output items for them.
    const streamed = events.filter((e) => e.type === 'agent.session.turn.item.done').map((e) => e.item);
    expect(streamed.filter((i: any) => i.type.endsWith('subagent_call') || i.type === 'wait_for_subagents_call').map((i: any) => i.type)).toEqual([
      'create_subagent_call',
      'create_subagent_call',
      'wait_for_subagents_call',
      'close_subagent_call',
    ]);
    expect(streamed.filter((i: any) => i.type === 'function_call' || i.type === 'function_call_output')).toEqual([]);

    // Session items (oldest first): the calls as the four item types, naming the subagents by id.
    const items: any[] = [];
    for await (const it of sessions().items.list(s.id, { order: 'asc', limit: 2 })) items.push(it);
    const calls = items.filter((i) => i.type !== 'message');
    expect(calls).toEqual([
      { id: expect.stringMatching(/^fc_/), type: 'create_subagent_call', agent_id: s.agent.id, content: [{ type: 'output_text', text: child('north is clear') }], model: null, reasoning_effort: null, status: 'completed', turn_id: turnId },
      { id: expect.stringMatching(/^fc_/), type: 'create_subagent_call', agent_id: s.agent.id, content: [{ type: 'output_text', text: child('south is busy') }], model: null, reasoning_effort: null, status: 'completed', turn_id: turnId },
      { id: expect.stringMatching(/^fc_/), type: 'wait_for_subagents_call', recipient_agent_ids: [north, south], sender_agent_id: s.agent.id, status: 'completed', turn_id: turnId },
      { id: expect.stringMatching(/^fc_/), type: 'close_subagent_call', recipient_agent_id: north, sender_agent_id: s.agent.id, status: 'completed', turn_id: turnId },
    ]);
    expect(streamed.filter((i: any) => i.type !== 'message').map((i: any) => i.id)).toEqual(calls.map((i) => i.id));
    expect(items[items.length - 1]).toMatchObject({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Both regions reported.' }] });
    // A cursor in the middle of the calls pages on from there.
    const after = await sessions().items.list(s.id, { order: 'asc', after: calls[1].id, limit: 2 });
    expect(after.data.map((i: any) => i.id)).toEqual([calls[2].id, calls[3].id]);

    // sessions.subagents: list (newest first by default, auto-paging), retrieve, their turns and items.
    const listed: any[] = [];
    for await (const x of sessions().subagents.list(s.id, { limit: 1 })) listed.push(x);
    expect(listed.map((x) => [x.id, x.name, x.status])).toEqual([
      [south, 'south', 'active'],
      [north, 'north', 'closed'],
    ]);
    expect(listed[1].closed_at).toEqual(expect.any(Number));
    expect((await sessions().subagents.list(s.id, { order: 'asc' })).data.map((x: any) => x.id)).toEqual([north, south]);
    const got: any = await sessions().subagents.retrieve(south, { session_id: s.id });
    expect(got).toEqual(listed[0]);
    const turns: any[] = [];
    for await (const x of sessions().subagents.turns.list(south, { session_id: s.id })) turns.push(x);
    expect(turns).toEqual([expect.objectContaining({ object: 'agent.session.turn', session_id: south, subagent_id: south, status: 'completed' })]);
    expect(await sessions().subagents.turns.retrieve(turns[0].id, { session_id: s.id, subagent_id: south })).toEqual(turns[0]);
    const turnItems: any[] = [];
    for await (const x of sessions().subagents.turns.items.list(turns[0].id, { session_id: s.id, subagent_id: south, order: 'asc' })) turnItems.push(x);
    expect(turnItems.map((i) => [i.type, i.role, i.content?.[0]?.text])).toEqual([
      ['message', 'user', child('south is busy')],
      ['message', 'assistant', 'south is busy'],
    ]);
    const ownItems: any[] = [];
    for await (const x of sessions().subagents.items.list(south, { session_id: s.id })) ownItems.push(x);
    expect(ownItems.map((i) => i.id)).toEqual([...turnItems].reverse().map((i) => i.id));
    // The native side: the same child sessions, the turn that created them.
    const native = await t.call(key, 'GET', `/v1/sessions/${s.id}/subagents`);
    expect(native.body.data.map((x: any) => [x.id, x.parent_run_id])).toEqual([
      [north, turnId],
      [south, turnId],
    ]);
    // A subagent of another session, or a session that is no subagent, is 404.
    const other: any = await create();
    await expect(sessions().subagents.retrieve(south, { session_id: other.id })).rejects.toBeInstanceOf(NotFoundError);
    await expect(sessions().subagents.retrieve(other.id, { session_id: s.id })).rejects.toBeInstanceOf(NotFoundError);
    await expect(sessions().subagents.turns.list(north, { session_id: other.id }).then((p) => p.data)).rejects.toBeInstanceOf(NotFoundError);
    expect((await sessions().subagents.list(other.id)).data).toEqual([]);
  });

  it('a bad inline agent is BadRequestError with a clear message and the param, and creates nothing', async () => {
    const fn = { type: 'function', name: 'ask', description: 'Asks.', parameters: { type: 'object' } };
    const newest = async () => (await t.call(key, 'GET', '/v1/sessions?limit=1&order=desc')).body.data[0]?.id ?? null;
    const before = await newest();
    const cases: Array<[unknown, RegExp, string]> = [
      [{ model: 'scripted', tools: [{ type: 'mcp', server_label: 'crm', transport: { type: 'streamable_http', url: 'http://127.0.0.1:1/mcp' } }] }, /tool type "mcp" is not supported in an inline agent: only "function" tools/, 'agent.tools[0].type'],
      [{ model: 'scripted', tools: [{ type: 'web_search' }] }, /tool type "web_search" is not supported/, 'agent.tools[0].type'],
      [{ tools: [fn] }, /agent\.model is required/, 'agent.model'],
      [{ model: 'no-such-model', tools: [fn] }, /inline agent: agent\.model must be one of: scripted/, 'agent.model'],
      [{ model: 'scripted', tools: [{ ...fn, name: 'get_time' }] }, /agent\.tools\[0\]\.name "get_time" is a built-in tool name/, 'agent.tools[0].name'],
      [{ model: 'scripted', tools: [{ ...fn, parameters: { type: 'object', properties: 5 } }] }, /agent\.tools\[0\]\.parameters/, 'agent.tools[0].parameters'],
      [{ model: 'scripted', tools: [{ ...fn, async: true }] }, /functions the agent does not wait for are not supported/, 'agent.tools[0].async'],
      [{ model: 'scripted', reasoning: { effort: 'high' } }, /agent\.reasoning is not supported/, 'agent.reasoning'],
      [{ model: 'scripted', multi_agent: { enabled: 'yes' } }, /agent\.multi_agent must be/, 'agent.multi_agent'],
      [{ model: 'scripted', multi_agent: { enabled: true, max_concurrent_subagents: 99 } }, /agent\.multi_agent\.max_concurrent_subagents must be an integer 1\.\.32/, 'agent.multi_agent.max_concurrent_subagents'],
      [{ model: 'scripted', multi_agent: { enabled: true, agents: ['assistant'] } }, /agent\.multi_agent\.agents is not a field/, 'agent.multi_agent.agents'],
      [{ model: 'scripted', voice: 'x' }, /agent\.voice is not a field of an inline agent/, 'agent.voice'],
    ];
    for (const [agent, message, param] of cases) {
      const err: any = await sessions()
        .create({ environment: { type: 'none' }, agent } as never)
        .catch((e) => e);
      expect(err).toBeInstanceOf(BadRequestError);
      expect([err.message, err.param]).toEqual([expect.stringMatching(message), param]);
      expect(err.code).toBe('invalid_request');
    }
    const both: any = await sessions()
      .create({ agent_id: 'assistant', environment: { type: 'none' }, agent: { model: 'scripted' } })
      .catch((e) => e);
    expect(both).toBeInstanceOf(BadRequestError);
    expect(both.message).toMatch(/agent together with agent_id .* is not supported by this server/);
    expect(both.param).toBe('agent');
    expect(await newest()).toBe(before);
  });

  it('a stream cut mid-turn and resumed with Last-Event-ID delivers every event exactly once', async () => {
    const s = await create();
    const url = `${t.url}/openai/v1/agents/sessions/${s.id}/events`;
    const headers = { authorization: `Bearer ${key}` };
    const first = await openSse(url, { headers });
    const before = await t.call(key, 'GET', `/v1/sessions/${s.id}/events`);
    const start = before.body.last_sequence as number;
    await sessions().events.create(s.id, {
      events: [message(script([{ text: 'Looking.', tool_calls: [{ name: 'get_time', arguments: {} }] }, { text: 'x'.repeat(30), chunk_size: 1, delay_ms: 15 }]))],
    });
    const got: SseEvent[] = [];
    let cuts = 0;
    let stream = first;
    for (;;) {
      const e = await stream.next(15000);
      if (e === null) throw new Error('stream ended');
      got.push(e);
      if (e.json.type === 'agent.session.idle' && got.some((g) => g.json.type === 'agent.session.turn.completed')) break;
      // Cut after the 2nd (in the middle of run.started's three frames), 5th, 9th and 14th frame.
      if ([2, 5, 9, 14].includes(got.length)) {
        stream.close();
        cuts++;
        stream = await openSse(url, { headers: { ...headers, 'last-event-id': e.id! } });
      }
    }
    stream.close();
    expect(cuts).toBe(4);
    expect(got.some((e) => e.id!.includes('.'))).toBe(true); // several frames of one native event
    const replay = await openSse(url, { headers: { ...headers, 'last-event-id': String(start) } });
    const full: SseEvent[] = [];
    for (;;) {
      const e = await replay.next(15000);
      if (e === null) break;
      full.push(e);
      if (e.json.type === 'agent.session.idle') break;
    }
    replay.close();
    expect(got.map((e) => e.json.event_id)).toEqual(full.map((e) => e.json.event_id));
    expect(got.map((e) => e.data)).toEqual(full.map((e) => e.data));
    expect(new Set(got.map((e) => e.json.event_id)).size).toBe(got.length);
    expect(got[0].json.type).toBe('agent.session.turn.created');
  });
});
