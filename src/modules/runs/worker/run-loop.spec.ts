import { SystemClock } from '../../../common/clock/clock';
import { SecretScrubber } from '../../../common/secrets/secret-scrubber';
import { RunSecrets } from '../application/run-secrets';
import { AppConfig } from '../../../common/config/app-config';
import { ConcurrencyConflict } from '../../../common/errors/domain-error';
import { AgentDirectory, handoffTool, ResolvedAgent } from '../../agents/domain/agent-definition';
import { ModelError, ModelRequest, ModelRouter, ModelStreamEvent } from '../../agents/domain/model-provider';
import { AgentTool, ToolContext, ToolDefinition, ToolOutcome, ToolRegistry } from '../../agents/domain/tool';
import { MessageProps, MessageWrite } from '../../sessions/domain/message';
import { MessageRepository } from '../../sessions/domain/message.repository';
import { newTestRun, testEnv } from '../../../../test/helpers/run-fixture';
import { ApplyToRun } from '../application/apply-to-run';
import { ApprovalsPort } from '../application/approvals-port';
import { LeftoversArrived, RunPersistence } from '../application/run-persistence';
import { RunSignals } from '../application/run-signals';
import { ApprovalGate, ApprovalToOpen } from '../domain/approval-gate';
import { Run, RunProps, SteeredInput } from '../domain/run.aggregate';
import { decide } from '../domain/run-decider';
import { RunRepository } from '../domain/run.repository';
import { SpendCheck, SpendGate } from '../../usage/domain/spend';
import { LeaseKeeper } from './lease-keeper';
import { ModelTurnEffect } from './model-turn.effect';
import { RunEnv } from './run-env';
import { RunExecutor } from './run-executor';
import { RunLoop } from './run-loop';
import { RunWriter } from './run-writer';
import { ToolCallEffect } from './tool-call.effect';
import { TurnContext } from './turn-context';

/**
 * The executor's loop driven with fakes of its ports: a scripted model router, a tool registry,
 * and an in-memory store standing in for the run repository, RunPersistence's guarded commit
 * (a version check, the run's events, a message write riding on it) and the message history.
 * Each test reads what was committed: the commits (one per database round trip of the real
 * store), their public events in order, the rows.
 */

/** The in-memory database: run rows, committed public events, messages. */
class Store {
  readonly rows = new Map<string, RunProps>();
  readonly messages = new Map<string, MessageProps>();
  /** Each commit's public event types, in commit order. */
  readonly commits: string[][] = [];
  heartbeatAnswer: { status: string; cancelRequested: boolean; inboxSize: number } | null = { status: 'running', cancelRequested: false, inboxSize: 0 };
  private sequence = 0;

  constructor(run: Run) {
    this.rows.set(run.id, run.snapshot() as RunProps);
    const o = run.owner;
    this.addMessage({ id: run.propsForPersistence().userMessageId, tenantId: o.tenantId, subjectId: o.subjectId, sessionId: o.sessionId, runId: o.runId, role: 'user', status: 'completed', content: [{ type: 'text', text: 'hi' }], metadata: {} });
  }

  get events(): string[] {
    return this.commits.flat();
  }
  row(id = 'run_1'): RunProps {
    return this.rows.get(id)!;
  }

  /** RunPersistence.save / saveWithMessage: one guarded commit (an ending one asks the decider about the stored inbox first, as the real one does). */
  readonly persistence = {
    save: async (run: Run, inTx?: () => Promise<void>) => {
      this.refuseEndWithLeftovers(run);
      if (inTx) await inTx();
      this.commit(run);
    },
    saveWithMessage: async (run: Run, message: MessageWrite) => {
      this.refuseEndWithLeftovers(run);
      this.commit(run, message);
    },
  };

  /** A steer committed without a signal (as one landing after the run's last read of its inbox). */
  steerQuietly(input: SteeredInput, id = 'run_1'): void {
    const row = this.rows.get(id)!;
    row.inbox = [...row.inbox, input];
    this.addMessage({ id: input.message_id, tenantId: 't', subjectId: 's', sessionId: 'sess_1', runId: id, role: 'user', status: 'completed', content: [{ type: 'text', text: 'more' }], metadata: {} });
  }

  private refuseEndWithLeftovers(run: Run): void {
    if (!run.isTerminal) return;
    const leftover = this.rows.get(run.id)!.inbox.filter((i) => !run.takenInputs.includes(i.message_id));
    const next = decide(run.propsForPersistence(), { type: 'leftover_inputs', inputs: leftover }, testEnv()).effect;
    if (next.type === 'take_leftovers') throw new LeftoversArrived(next.inputs);
  }

  /** RunRepository: what the executor reads. */
  readonly runs = {
    findById: async (id: string) => (this.rows.has(id) ? Run.restore(structuredClone(this.rows.get(id)!)) : null),
    heartbeat: async () => this.heartbeatAnswer,
    inboxOf: async (id: string) => this.rows.get(id)?.inbox ?? [],
    lastAgentOf: async () => {
      this.lastAgentReads++;
      return this.lastAgent;
    },
  };
  /** The agent the session's previous run ended with (RunRepository.lastAgentOf), and how often it was read. */
  lastAgent: { id: string; version: string } | null = null;
  lastAgentReads = 0;

  /** MessageRepository: the history and a message by id. */
  readonly messageRepository = {
    history: async (sessionId: string) => [...this.messages.values()].filter((m) => m.sessionId === sessionId).sort((a, b) => a.sequence - b.sequence),
    findById: async (id: string) => this.messages.get(id) ?? null,
  };

  private commit(run: Run, message?: MessageWrite): void {
    const stored = this.rows.get(run.id)!;
    if (stored.version !== run.expectedVersion) throw new ConcurrencyConflict('run', run.id, run.expectedVersion);
    if (message?.kind === 'append') this.addMessage(message.message);
    else if (message) Object.assign(this.messages.get(message.id)!, message.changes);
    this.rows.set(run.id, run.snapshot() as RunProps);
    this.commits.push(run.unsavedEvents.map((e) => e.type));
    run.markSaved();
  }

  private addMessage(m: Omit<MessageProps, 'sequence' | 'createdAt' | 'updatedAt'>): void {
    this.messages.set(m.id, { ...structuredClone(m), sequence: ++this.sequence, createdAt: new Date(), updatedAt: new Date() });
  }
}

type Turn = (req: ModelRequest) => AsyncIterable<ModelStreamEvent>;

/** A model router whose model answers turn `callIndex` with `turns[callIndex]`; it keeps each request. */
class FakeModels extends ModelRouter {
  readonly requests: ModelRequest[] = [];
  constructor(private readonly turns: Turn[]) {
    super();
  }
  forModel() {
    return {
      stream: (req: ModelRequest) => {
        this.requests.push(req);
        return this.turns[req.callIndex](req);
      },
    };
  }
}

/** A tool registry of built-ins whose outcomes the test gives; it keeps each call. */
class FakeTools extends ToolRegistry {
  readonly calls: Array<{ name: string; args: unknown; ctx: ToolContext }> = [];
  constructor(
    private readonly defs: ToolDefinition[],
    private readonly run: (name: string, args: unknown, ctx: ToolContext) => Promise<ToolOutcome> = async () => ({ ok: true, result: { found: true } }),
  ) {
    super();
  }
  get(name: string) {
    return this.defs.find((d) => d.name === name) ?? null;
  }
  all() {
    return this.defs;
  }
  execute(name: string, args: unknown, ctx: ToolContext, _resolved?: AgentTool): Promise<ToolOutcome> {
    this.calls.push({ name, args, ctx });
    return this.run(name, args, ctx);
  }
}

class FakeGate extends ApprovalGate {
  readonly opened: ApprovalToOpen[] = [];
  async open(a: ApprovalToOpen) {
    this.opened.push(a);
  }
  async recordDecision() {}
  async closeForRun() {}
}

const tool = (name: string, o: Partial<ToolDefinition> = {}): ToolDefinition => ({
  name,
  description: `${name} tool`,
  parameters: { type: 'object' },
  risk: 'auto',
  visibility: 'public',
  idempotent: true,
  executor: 'server',
  timeoutMs: 5000,
  ...o,
});

function agentWith(tools: ToolDefinition[]): ResolvedAgent {
  return {
    id: 'a',
    version: '1',
    description: '',
    model: 'scripted',
    instructions: 'be brief',
    tools: tools.map((t) => t.name),
    source: 'file',
    tenantId: null,
    resolvedTools: tools.map((t) => ({ ...t, binding: { kind: 'builtin' } })),
    createdAt: null,
    deletedAt: null,
  };
}

/**
 * A tenant's spend limit as the usage module's gate answers it: every reservation is refused while
 * `refusing`, else held; what was asked is recorded in order (with the store's commits so far).
 */
class FakeSpend extends SpendGate {
  readonly log: string[] = [];
  refusing = false;
  constructor(private readonly store: Store) {
    super();
  }
  async assertWithinLimit(): Promise<void> {}
  async check(): Promise<SpendCheck> {
    return { exceeded: false };
  }
  async hasLimit(): Promise<boolean> {
    return true;
  }
  async reserve(_tenant: string, call: { runId: string; messageId: string; amount: string }): Promise<SpendCheck & { reserved: boolean }> {
    this.log.push(`reserve ${call.messageId} ${call.amount} after ${this.store.commits.length} commits`);
    if (this.refusing) return { exceeded: true, reserved: false, resetsAt: new Date('2030-01-01T00:00:00Z'), details: { limit: { amount: '1', currency: 'USD', window: 'day' } } };
    return { exceeded: false, reserved: true };
  }
  async extend(): Promise<void> {}
  async release(_run: string, messageId: string): Promise<void> {
    this.log.push(`release ${messageId} after ${this.store.commits.length} commits`);
  }
}

/** The executor wired as runs.module wires it, over fakes. */
function executorWith(o: { turns: Turn[]; tools?: FakeTools; approvals?: boolean; agents?: Record<string, ResolvedAgent>; spend?: (store: Store) => SpendGate }) {
  const run = newTestRun();
  const store = new Store(run);
  const tools = o.tools ?? new FakeTools([]);
  const models = new FakeModels(o.turns);
  const gate = new FakeGate();
  const signals = new RunSignals();
  const config = { runLeaseMs: 600, nodeId: 'node_1', approvalTtlMs: 60_000 } as AppConfig;
  const approvals = { available: o.approvals ?? false, gate: o.approvals ? gate : null } as unknown as ApprovalsPort;
  const agents = { findPinned: async (_t: string, id: string) => o.agents?.[id] ?? agentWith(tools.all()) } as unknown as AgentDirectory;
  const runs = store.runs as unknown as RunRepository;
  const failed: string[] = [];
  const path = { apply: async (id: string) => void failed.push(id) } as unknown as ApplyToRun;

  const env = new RunEnv(config, tools, approvals, new SystemClock());
  const context = new TurnContext(store.messageRepository as unknown as MessageRepository);
  const writer = new RunWriter(store.persistence as unknown as RunPersistence);
  // No secrets module here: the runs resolve nothing (the scrubbing rule has its own e2e test).
  const secrets = { scrubberOf: async () => SecretScrubber.none, record: async () => undefined } as unknown as RunSecrets;
  const spend = o.spend?.(store);
  const loop = new RunLoop(runs, agents, approvals, env, context, writer, new ModelTurnEffect(models, env, context, writer), new ToolCallEffect(tools, env, writer, secrets), secrets, undefined, spend);
  const executor = new RunExecutor(loop, new LeaseKeeper(config, runs, signals, spend), path);
  return { executor, run, store, models, tools, gate, signals, failed };
}

const text = (t: string): Turn =>
  async function* () {
    yield { type: 'text_delta', text: t };
    yield { type: 'usage', input_tokens: 10, output_tokens: 2 };
  };
const callTool = (name: string, args: unknown, id = 'call_1'): Turn =>
  async function* () {
    yield { type: 'tool_call', id, name, arguments: args };
    yield { type: 'usage', input_tokens: 10, output_tokens: 3 };
  };

/** Agent `a` (hands off to `b`) and `b` (instructions, model and tools of its own), as the directory pins them. */
function handoffPair(tools: FakeTools): Record<string, ResolvedAgent> {
  const a = agentWith(tools.all().filter((t) => t.name === 'get_time'));
  a.resolvedTools.push(handoffTool({ id: 'b', version: '1', model: 'model-b', description: 'billing' }));
  const b = { ...agentWith(tools.all().filter((t) => t.name === 'lookup')), id: 'b', instructions: 'you do billing', model: 'model-b' };
  return { a, b };
}

describe('RunLoop: spend reservations (issue 48)', () => {
  it('a model call holds its estimate before it starts and lets go after the commit of its end', async () => {
    let spend!: FakeSpend;
    const t = executorWith({ turns: [text('hello')], spend: (store) => (spend = new FakeSpend(store)) });
    await expect(t.executor.execute(t.run)).resolves.toBe('finished');
    expect(t.models.requests).toHaveLength(1);
    const turn = t.store.row().finalMessageId;
    // Reserved after run.started committed, released once the turn's end (with its spend) did.
    expect(spend.log).toEqual([expect.stringMatching(new RegExp(`^reserve ${turn} \\d`)), `release ${turn} after 2 commits`]);
    expect(spend.log[0]).toMatch(/after 1 commits$/);
  });

  it('a refused reservation: the turn is taken back, no model call is made, the run waits for quota', async () => {
    let spend!: FakeSpend;
    const t = executorWith({ turns: [text('never')], spend: (store) => ((spend = new FakeSpend(store)), (spend.refusing = true), spend) });
    await expect(t.executor.execute(t.run)).resolves.toBe('waiting');
    expect(t.models.requests).toHaveLength(0);
    expect(t.store.row()).toMatchObject({ status: 'waiting_for_quota', stepCount: 0 });
    expect(t.store.events).not.toContain('message.started');
    expect(t.store.events).toContain('run.waiting');
    expect(spend.log).toHaveLength(1);
  });
});

describe('RunLoop: handoffs (CONTRACT 16)', () => {
  it('transfer_to_b: never executed, one commit with agent.handoff; the next turn has b\'s instructions, tools and model, and the history', async () => {
    const tools = new FakeTools([tool('get_time'), tool('lookup')]);
    const t = executorWith({ turns: [callTool('transfer_to_b', { reason: 'billing' }), text('b here')], tools, agents: handoffPair(tools) });

    await expect(t.executor.execute(t.run)).resolves.toBe('finished');

    expect(tools.calls).toHaveLength(0);
    expect(t.store.commits).toEqual([
      ['run.started'],
      ['message.started', 'message.completed', 'tool.requested'],
      ['tool.started', 'tool.completed', 'agent.handoff'],
      ['message.started', 'message.delta', 'message.completed', 'usage', 'run.finished'],
    ]);
    expect(t.models.requests[0]).toMatchObject({ instructions: 'be brief', model: 'scripted' });
    expect(t.models.requests[0].tools.map((x) => x.name)).toEqual(['get_time', 'transfer_to_b']);
    expect(t.models.requests[1]).toMatchObject({ instructions: 'you do billing', model: 'model-b' });
    expect(t.models.requests[1].tools.map((x) => x.name)).toEqual(['lookup']);
    expect(t.models.requests[1].messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(t.store.row()).toMatchObject({ status: 'completed', stepCount: 2, model: 'model-b', state: expect.objectContaining({ current_agent: { id: 'b', version: '1' } }) });
  });

  it("a run of an agent that can hand off starts with the agent its session ended with", async () => {
    const tools = new FakeTools([tool('get_time'), tool('lookup')]);
    const t = executorWith({ turns: [text('still b')], tools, agents: handoffPair(tools) });
    t.store.lastAgent = { id: 'b', version: '1' };

    await expect(t.executor.execute(t.run)).resolves.toBe('finished');

    expect(t.store.lastAgentReads).toBe(1);
    expect(t.models.requests[0]).toMatchObject({ instructions: 'you do billing', model: 'model-b' });
    expect(t.store.row().state.current_agent).toEqual({ id: 'b', version: '1' });
  });

  it('an agent that cannot hand off pays nothing: the session\'s last agent is never read', async () => {
    const t = executorWith({ turns: [text('hi')] });
    t.store.lastAgent = { id: 'b', version: '1' };

    await expect(t.executor.execute(t.run)).resolves.toBe('finished');

    expect(t.store.lastAgentReads).toBe(0);
    expect(t.store.row().state.current_agent).toBeUndefined();
  });
});

describe('RunLoop (with the executor, the lease keeper and the writer) over fake model and tool registries', () => {
  it('a text-only turn: the run starts, the answer is one commit with the run\'s end, and the run completes with it', async () => {
    const t = executorWith({ turns: [text('Hello there')] });

    await expect(t.executor.execute(t.run)).resolves.toBe('finished');

    // Two commits: run.started on its own (a client waits for it), then the turn with the run's end.
    expect(t.store.commits).toEqual([
      ['run.started'],
      ['message.started', 'message.delta', 'message.completed', 'usage', 'run.finished'],
    ]);
    const row = t.store.row();
    expect(row).toMatchObject({ status: 'completed', stepCount: 1, usage: expect.objectContaining({ input_tokens: 10, output_tokens: 2, model_calls: 1 }) });
    const answer = t.store.messages.get(row.finalMessageId!)!;
    expect(answer).toMatchObject({ role: 'assistant', status: 'completed', content: [{ type: 'text', text: 'Hello there' }] });
    expect(t.models.requests[0]).toMatchObject({ instructions: 'be brief', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] });
  });

  it('input steered as the run was ending (after its last read of the inbox): the end is retracted, the same run takes it in another turn and then completes', async () => {
    let steered = false;
    const turn: Turn = async function* () {
      yield { type: 'text_delta', text: steered ? 'second' : 'first' };
      yield { type: 'usage', input_tokens: 10, output_tokens: 2 };
      if (!steered) {
        steered = true;
        t.store.steerQuietly({ message_id: 'msg_late', accepted_at: new Date().toISOString(), model: 'scripted', limits: t.run.limits, metadata: {} });
      }
    };
    const t = executorWith({ turns: [turn] });

    await expect(t.executor.execute(t.run)).resolves.toBe('finished');

    // The first turn's end commits without the run's end; the second turn takes the input and ends the run.
    expect(t.models.requests).toHaveLength(2);
    expect(t.store.commits.filter((c) => c.includes('run.finished'))).toHaveLength(1);
    expect(t.store.events.filter((e) => e === 'run.input')).toHaveLength(1);
    expect(t.store.events.indexOf('run.input')).toBeGreaterThan(t.store.events.indexOf('message.completed'));
    const row = t.store.row();
    expect(row).toMatchObject({ status: 'completed', stepCount: 2, inbox: [] });
    expect(row.state.inputs.map((i) => i.message_id)).toEqual(['msg_late']);
    expect(t.store.messages.get(row.finalMessageId!)!.content).toEqual([{ type: 'text', text: 'second' }]);
  });

  it('a tool call, then the answer: the tool runs once with its side-effect key, its result reaches the next turn, the run completes', async () => {
    const tools = new FakeTools([tool('lookup')]);
    const t = executorWith({ turns: [callTool('lookup', { q: 'x' }), text('Found it')], tools });

    await expect(t.executor.execute(t.run)).resolves.toBe('finished');

    expect(tools.calls).toHaveLength(1);
    expect(tools.calls[0]).toMatchObject({ name: 'lookup', args: { q: 'x' }, ctx: { runId: 'run_1', toolCallId: 'call_1', idempotencyKey: 'run_1:call_1', attempt: 1 } });
    // A fast idempotent tool's start commits with its outcome and tool message (one commit).
    expect(t.store.commits).toEqual([
      ['run.started'],
      ['message.started', 'message.completed', 'tool.requested'],
      ['tool.started', 'tool.completed'],
      ['message.started', 'message.delta', 'message.completed', 'usage', 'run.finished'],
    ]);
    // The second turn saw the call and its result (this execution's context, not a second read).
    const second = t.models.requests[1].messages;
    expect(second.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(second[2].content[0]).toMatchObject({ type: 'tool_result', tool_call_id: 'call_1', ok: true, result: { found: true } });
    expect(t.store.row()).toMatchObject({ status: 'completed', usage: expect.objectContaining({ tool_calls: 1, model_calls: 2 }) });
  });

  it('a tool that needs approval: the approval opens in the commit that makes the run wait, and the tool does not run', async () => {
    const tools = new FakeTools([tool('delete_file', { risk: 'approve', idempotent: false })]);
    const t = executorWith({ turns: [callTool('delete_file', { path: '/x' })], tools, approvals: true });

    await expect(t.executor.execute(t.run)).resolves.toBe('waiting');

    expect(tools.calls).toEqual([]);
    expect(t.gate.opened).toHaveLength(1);
    expect(t.gate.opened[0]).toMatchObject({ runId: 'run_1', call: { tool_call_id: 'call_1', tool_name: 'delete_file' } });
    expect(t.store.commits.at(-1)).toEqual(['approval.requested', 'run.waiting']);
    expect(t.store.row()).toMatchObject({ status: 'waiting_for_approval' });
    expect(t.store.row().state.pending[0]).toMatchObject({ status: 'awaiting_approval', approval_id: t.gate.opened[0].approvalId });
  });

  it('a cancel signalled while a tool runs is observed before the next turn: the tool\'s outcome is kept, the model is not called again', async () => {
    let t!: ReturnType<typeof executorWith>;
    const tools = new FakeTools([tool('lookup')], async () => {
      t.signals.cancelRequested('run_1');
      return { ok: true, result: 'done' };
    });
    t = executorWith({ turns: [callTool('lookup', {}), text('never')], tools });

    await expect(t.executor.execute(t.run)).resolves.toBe('finished');

    expect(t.models.requests).toHaveLength(1);
    expect(t.store.events).toContain('tool.completed');
    expect(t.store.commits.at(-1)).toEqual(['usage', 'run.finished']);
    expect(t.store.row()).toMatchObject({ status: 'cancelled', usage: expect.objectContaining({ model_calls: 1, tool_calls: 1 }) });
  });

  it('a cancel committed by another writer while a tool runs: the step\'s commit conflicts and writes nothing, the loop reads the run again and ends it cancelled', async () => {
    let t!: ReturnType<typeof executorWith>;
    const tools = new FakeTools([tool('lookup')], async () => {
      // As ApplyToRun would (without the in-process signal: the loop learns of it by the conflict).
      const other = (await t.store.runs.findById('run_1'))!;
      other.decide({ type: 'cancel_requested', requested_by: 'user' }, testEnv());
      await t.store.persistence.save(other);
      return { ok: true, result: 'done' };
    });
    t = executorWith({ turns: [callTool('lookup', {}), text('never')], tools });

    await expect(t.executor.execute(t.run)).resolves.toBe('finished');

    expect(t.store.commits).toEqual([['run.started'], ['message.started', 'message.completed', 'tool.requested'], ['run.cancel_requested'], ['usage', 'run.finished']]);
    expect(t.models.requests).toHaveLength(1);
    expect([...t.store.messages.values()].filter((m) => m.role === 'tool')).toEqual([]);
    expect(t.store.row()).toMatchObject({ status: 'cancelled' });
  });

  it('a model error fails the run with its code, and the turn\'s message is failed', async () => {
    const t = executorWith({
      turns: [
        // eslint-disable-next-line require-yield
        async function* () {
          throw new ModelError('model_rate_limited', 'slow down');
        },
      ],
    });

    await expect(t.executor.execute(t.run)).resolves.toBe('finished');

    expect(t.store.row()).toMatchObject({ status: 'failed', error: { code: 'model_rate_limited', message: 'slow down' } });
    expect(t.store.commits.at(-1)).toEqual(['message.started', 'message.completed', 'usage', 'run.finished']);
    const turn = [...t.store.messages.values()].find((m) => m.role === 'assistant')!;
    expect(turn.status).toBe('failed');
    // The run's own failure path (failed_unexpectedly) is not taken: the decider failed it.
    expect(t.failed).toEqual([]);
  });

  it('an unreachable database (pool wait timed out) interrupts the run without failing it: it stays running for recovery', async () => {
    const t = executorWith({ turns: [text('Hello there')] });
    const save = t.store.persistence.saveWithMessage;
    let refused = 0;
    t.store.persistence.saveWithMessage = async (run, message) => {
      if (run.isTerminal && refused++ === 0) throw new Error('timeout exceeded when trying to connect');
      return save(run, message);
    };

    await expect(t.executor.execute(t.run)).resolves.toBe('interrupted');

    expect(refused).toBe(1);
    expect(t.failed).toEqual([]);
    expect(t.store.commits).toEqual([['run.started']]);
    expect(t.store.row()).toMatchObject({ status: 'running' });
    // Claimed again (the lease ran out): the run resumes from its last commit and completes.
    await expect(t.executor.execute(Run.restore(structuredClone(t.store.row())))).resolves.toBe('finished');
    expect(t.store.row()).toMatchObject({ status: 'completed' });
  });

  it('any other unexpected error fails the run (failed_unexpectedly)', async () => {
    const t = executorWith({ turns: [text('Hello there')] });
    t.store.persistence.saveWithMessage = async () => {
      throw new Error('a bug');
    };

    await expect(t.executor.execute(t.run)).resolves.toBe('finished');

    expect(t.failed).toEqual(['run_1']);
  });

  it('a lost lease aborts the model call and stops the loop without writing', async () => {
    let t!: ReturnType<typeof executorWith>;
    let committedWhenLost = -1;
    t = executorWith({
      turns: [
        async function* (req) {
          // Answers only once aborted: the heartbeat finds the lease gone meanwhile.
          t.store.heartbeatAnswer = null;
          await new Promise((resolve) => req.signal.addEventListener('abort', resolve, { once: true }));
          committedWhenLost = t.store.commits.length;
          yield { type: 'text_delta', text: 'too late' };
        },
      ],
    });

    await expect(t.executor.execute(t.run)).resolves.toBe('lease_lost');

    expect(committedWhenLost).toBeGreaterThan(0);
    expect(t.store.commits).toHaveLength(committedWhenLost);
    expect(t.store.row().status).toBe('running');
    expect(t.failed).toEqual([]);
  });
});
