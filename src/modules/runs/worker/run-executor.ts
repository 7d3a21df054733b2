import { Injectable, Logger, Optional } from '@nestjs/common';
import { AppConfig } from '../../../common/config/app-config';
import { DbPriority } from '../../../common/database/db-priority';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { ConcurrencyConflict, DomainError } from '../../../common/errors/domain-error';
import { newId } from '../../../common/ids/ids';
import { jsonbOrdered } from '../../../common/database/jsonb';
import { Metrics } from '../../../common/metrics/metrics';
import { AgentDirectory, AgentTool, ResolvedAgent } from '../../agents/domain/agent-definition';
import { ContentPart, ModelAttachment, ModelError, ModelMessage, ModelRouter, ModelStreamEvent, ToolSpec } from '../../agents/domain/model-provider';
import { AttachmentReader, ToolOutcome, ToolRegistry } from '../../agents/domain/tool';
import { sanitizeJson, sanitizeText, TextDeltaSanitizer } from '../../../common/text/unsafe-text';
import { MessageStatus, MessageWrite } from '../../sessions/domain/message';
import { MessageRepository } from '../../sessions/domain/message.repository';
import { RunPersistence } from '../application/run-persistence';
import { RunSignals } from '../application/run-signals';
import { ApprovalGate } from '../domain/approval-gate';
import { Run, RunProps } from '../domain/run.aggregate';
import { DecideEnv, Decision, Effect, Observation, toolResultContent } from '../domain/run-decider';
import { RunRepository } from '../domain/run.repository';
import { RunErrorCode } from '../domain/run-status';
import { DeltaBuffer } from './delta-buffer';
import { contextOf } from '../domain/model-context';

/** An idempotent tool that answers within this commits its tool.started with its outcome. */
const FAST_TOOL_MS = 20;
/** A model call that completes within this writes its turn's message (and message.started) with its completion. */
const MESSAGE_START_DELAY_MS = 50;
const MAX_ATTACHMENTS_IN_CONTEXT = 10;
const ATTACHMENT_TEXT_BYTES = 32 * 1024;

/** Why the loop stopped executing this run on this node. */
type Exit = 'finished' | 'waiting' | 'lease_lost';

class LeaseLost extends Error {}

interface ExecContext {
  abort: AbortController;
  cancelled: boolean;
  leaseLost: boolean;
  /** Input was steered to the run since its inbox was last read. */
  steered: boolean;
  /** Steered inputs the run knows of and has not taken (the heartbeat reports the stored count). */
  inboxKnown: number;
  /**
   * What the model saw in this execution's last turn plus the messages this execution committed
   * since (a completed assistant message, tool results), as a read of the history would give
   * them: the next turn does not read the history again. Cleared by a conflict (someone else
   * changed the run: the next turn reads).
   */
  context?: ModelMessage[];
  /** The run's pinned agent version with its tools (built-in, http, mcp, function), read once per execution. */
  agent?: ResolvedAgent | null;
}

/**
 * The agent loop for one claimed run: a state machine driven by the persisted run state.
 * Each step: check cancel / deadline / budgets -> model turn (deltas coalesced) -> for each tool
 * call: approval gate or client hand-off -> `tool.requested` (already persisted with the turn)
 * -> `tool.started` -> execute with min(tool timeout, time left) -> outcome + tool message ->
 * loop detection -> next step. Every write is a short transaction conditional on the run's
 * version; nothing is held open across a model or tool call.
 */
@Injectable()
export class RunExecutor {
  private readonly logger = new Logger('RunExecutor');
  private readonly live = new Set<ExecContext>();

  constructor(
    private readonly config: AppConfig,
    private readonly uow: UnitOfWork,
    private readonly runs: RunRepository,
    private readonly persistence: RunPersistence,
    private readonly messages: MessageRepository,
    private readonly signals: RunSignals,
    private readonly agents: AgentDirectory,
    private readonly models: ModelRouter,
    private readonly tools: ToolRegistry,
    @Optional() private readonly approvals?: ApprovalGate,
    @Optional() private readonly attachments?: AttachmentReader,
    @Optional() private readonly metrics?: Metrics,
  ) {}

  /** Executes a run this node has leased until it finishes, waits, or the lease is lost. */
  async execute(initial: Run): Promise<Exit> {
    const ctx: ExecContext = { abort: new AbortController(), cancelled: false, leaseLost: false, steered: false, inboxKnown: 0 };
    const onCancel = () => {
      ctx.cancelled = true;
      ctx.abort.abort(new Error('cancelled'));
    };
    const offCancel = this.signals.onCancel(initial.id, onCancel);
    const offSteer = this.signals.onInputSteered(initial.id, () => (ctx.steered = true));
    this.live.add(ctx);
    const heartbeatMs = Math.max(200, Math.min(1000, Math.floor(this.config.runLeaseMs / 3)));
    let beating = false;
    const heartbeat = setInterval(async () => {
      if (beating) return;
      beating = true;
      try {
        const hb = await this.runs.heartbeat(initial.id, this.config.nodeId, this.config.runLeaseMs);
        if (!hb) {
          ctx.leaseLost = true;
          ctx.abort.abort(new LeaseLost('lease lost'));
        } else if (hb.cancelRequested && !ctx.cancelled) {
          onCancel();
        }
        // Steered on another node: the run's inbox holds input the run has not seen.
        if (hb && hb.inboxSize > ctx.inboxKnown) ctx.steered = true;
      } catch (err) {
        this.logger.warn(`heartbeat of ${initial.id} failed: ${(err as Error).message}`);
      } finally {
        beating = false;
      }
    }, heartbeatMs);
    try {
      return await this.loop(initial, ctx);
    } catch (err) {
      if (err instanceof LeaseLost || ctx.leaseLost) return 'lease_lost';
      this.logger.error(`run ${initial.id} failed unexpectedly: ${(err as Error).stack ?? err}`);
      await this.failUnexpectedly(initial.id).catch(() => undefined);
      return 'finished';
    } finally {
      clearInterval(heartbeat);
      offCancel();
      offSteer();
      this.live.delete(ctx);
    }
  }

  /** Shutdown: stop every executing run here without writing; their leases are released next. */
  stopAll(): number {
    for (const ctx of this.live) {
      ctx.leaseLost = true;
      ctx.abort.abort(new LeaseLost('node shutting down'));
    }
    return this.live.size;
  }

  // ---------------------------------------------------------------------------------------

  private async reload(id: string): Promise<Run> {
    const run = await this.runs.findById(id);
    if (!run) throw new LeaseLost('run deleted');
    return run;
  }

  /** Commits `run`'s changes; on a version conflict (a cancel or decision landed) the caller reloads and decides again. */
  private async save(run: Run, ctx: ExecContext, write?: (() => Promise<void>) | MessageWrite): Promise<boolean> {
    if (ctx.leaseLost) throw new LeaseLost('lease lost');
    try {
      if (typeof write === 'object') await this.persistence.saveWithMessage(run, write);
      else await this.persistence.save(run, write);
      // run.started is durable (it commits with the first save): the rest is background work.
      DbPriority.lower('background');
      return true;
    } catch (err) {
      ctx.context = undefined;
      if (err instanceof ConcurrencyConflict) return false;
      throw err;
    }
  }

  /**
   * A tool of the run's agent version: its pinned definition (http, mcp and function tools,
   * built-ins as the version listed them), else a built-in by name (runs whose agent is gone).
   */
  private toolOf(ctx: ExecContext | undefined, name: string): AgentTool | null {
    const pinned = ctx?.agent?.resolvedTools.find((t) => t.name === name);
    if (pinned) return pinned.binding.kind === 'builtin' ? { ...(this.tools.get(name) ?? pinned), binding: pinned.binding } : pinned;
    const t = this.tools.get(name);
    return t ? { ...t, binding: { kind: 'builtin' } } : null;
  }

  /** What the decider needs besides the run: the clock, ids and the agent's tools. */
  private env(run: Run, ctx?: ExecContext): DecideEnv {
    const clientTools = run.state.client_tools;
    return {
      now: Date.now(),
      newId,
      tool: (name) => {
        // The run's agent version's tools (built-in, http, mcp, function), else a built-in by name.
        const t = this.toolOf(ctx, name);
        if (t) return { risk: t.risk, executor: t.executor, idempotent: t.idempotent };
        // A client tool of this run (declared with its request): the client executes it.
        return clientTools?.some((c) => c.name === name) ? { risk: 'auto', executor: 'client', idempotent: false } : null;
      },
      approvalsAvailable: this.approvals !== undefined,
      approvalTtlMs: this.config.approvalTtlMs,
    };
  }

  /**
   * The interpreter: asks the decider what is next, performs the effect and commits what it
   * decided. Write policy lives here, rules do not: `run.started` and a cleared turn ride on the
   * next write (a crash before it redoes them); a conflict reloads the run and decides again.
   */
  private async loop(initial: Run, ctx: ExecContext): Promise<Exit> {
    let run = initial;
    if (ctx.agent === undefined) {
      const snap = run.snapshot();
      ctx.agent = await this.agents.findPinned(run.owner.tenantId, snap.agent.id, snap.agent.version);
    }
    let observation: Observation = { type: 'lease_resumed' };
    for (let guard = 0; guard < 10_000; guard++) {
      if (ctx.leaseLost) return 'lease_lost';
      if (ctx.steered) run = await this.takeSteered(run, ctx);
      ctx.inboxKnown = run.propsForPersistence().inbox.length;
      const d = run.decide(observation, this.env(run, ctx));
      observation = { type: 'tick', cancel_signalled: ctx.cancelled };
      const effect = d.effect;
      let saved = true;
      switch (effect.type) {
        case 'finish':
          if (run.hasChanges) saved = await this.saveWithToolMessage(run, ctx, d);
          if (saved) return 'finished';
          break;
        case 'wait':
          if (await this.save(run, ctx)) return 'waiting';
          saved = false;
          break;
        case 'open_approval': {
          const gate = this.approvals!;
          const o = run.owner;
          saved = await this.save(run, ctx, () => gate.open({ ...o, approvalId: effect.approval_id, call: effect.call, expiresAt: new Date(effect.expires_at) }));
          if (saved) return 'waiting';
          break;
        }
        case 'close_interrupted_turn':
          saved = await this.closeInterruptedTurn(run, ctx, effect.message_id);
          break;
        case 'call_model':
          saved = await this.modelTurn(run, ctx, effect);
          break;
        case 'run_tool':
          saved = await this.runTool(run, ctx, effect);
          break;
        case 'continue':
        case 'resume':
        case 'none':
          // A cleared turn commits with the next write; anything else now (a client waits for
          // run.started: it commits on its own).
          if (d.events.some((e) => e.type !== 'pending_cleared')) saved = await this.saveWithToolMessage(run, ctx, d);
          break;
      }
      if (!saved) run = await this.reload(run.id);
    }
    throw new Error('loop guard exceeded');
  }

  /**
   * Commits the decision with the `tool` message of the call it finished (one per decision, if
   * any); the message then joins this execution's model context.
   */
  private async saveWithToolMessage(run: Run, ctx: ExecContext, d: Decision): Promise<boolean> {
    const done = d.events.find((e) => e.type === 'tool_finished');
    const call = done?.type === 'tool_finished' ? run.state.pending.find((p) => p.tool_call_id === done.tool_call_id) : undefined;
    if (!done || done.type !== 'tool_finished' || !call) return this.save(run, ctx);
    const o = run.owner;
    const content = toolResultContent(call, done.result);
    const saved = await this.save(run, ctx, {
      kind: 'append',
      message: { id: done.result_message_id, tenantId: o.tenantId, subjectId: o.subjectId, sessionId: o.sessionId, runId: o.runId, role: 'tool', status: 'completed', content, metadata: {} },
    });
    if (saved && ctx.context) ctx.context = [...ctx.context, { role: 'tool', content: jsonbOrdered(content) as ContentPart[] }];
    return saved;
  }

  /** Steered inputs arrived (signal or heartbeat): the run's inbox is read and given to the decider. */
  private async takeSteered(run: Run, ctx: ExecContext): Promise<Run> {
    ctx.steered = false;
    const inbox = await this.runs.inboxOf(run.id);
    run.decide({ type: 'input_steered', inputs: inbox }, this.env(run, ctx));
    return run;
  }

  // ---- model turn ------------------------------------------------------------------------

  private async modelTurn(run: Run, ctx: ExecContext, effect: Extract<Effect, { type: 'call_model' }>): Promise<boolean> {
    const snap = run.snapshot();
    const agent = ctx.agent;
    const messageId = effect.message_id;
    // Inputs steered into this turn: the history is read again (they sit before its message).
    if (run.unsavedEvents.some((e) => e.type === 'run.input')) ctx.context = undefined;
    // The turn's message row (and message.started, and the step) are written with the turn's first
    // write: its completion when the model answers within MESSAGE_START_DELAY_MS of being called
    // (one statement fewer per turn), else then, or with its first deltas if they come sooner. Until then a crash
    // leaves nothing of the turn, which is redone; afterwards the row is there for a take-over
    // to close. The turn's writes run one after the other, in order (the first one appends the
    // row, the others update it); after a conflict the later ones write nothing.
    let messageSaved = false;
    let written: Promise<boolean> | null = null;
    const persist = async (status: MessageStatus, content: ContentPart[]): Promise<boolean> => {
      const write: MessageWrite = messageSaved
        ? { kind: 'update', id: messageId, changes: status === 'streaming' ? { content } : { status, content } }
        : {
            kind: 'append',
            message: { id: messageId, tenantId: snap.tenantId, subjectId: snap.subjectId, sessionId: snap.sessionId, runId: snap.id, role: 'assistant', status, content, metadata: {} },
          };
      const saved = await this.save(run, ctx, write);
      if (saved) messageSaved = true;
      return saved;
    };
    const writeMessage = (status: MessageStatus, content: ContentPart[]): Promise<boolean> => {
      const next = (written ?? Promise.resolve(true)).then((ok) => (ok ? persist(status, content) : false));
      written = next;
      return next;
    };
    // Armed when the model is called (below): the delay is the model's, not the turn's reads'.
    let startTimer: NodeJS.Timeout | undefined;
    const deadline = run.deadline() ?? Date.now() + run.limits.timeout_ms;

    try {
      // The model sees the session's history up to this run's own input plus what this run added;
      // input of runs queued behind it is not part of its context. Read once per execution.
      const modelMessages: ModelMessage[] = ctx.context ?? (await this.readContext(run));
      const toolSpecs: ToolSpec[] = (agent?.resolvedTools ?? [])
        .map((t) => this.toolOf(ctx, t.name))
        .filter((t): t is NonNullable<typeof t> => t !== null)
        .map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
      for (const c of snap.state.client_tools ?? []) if (!toolSpecs.some((t) => t.name === c.name)) toolSpecs.push({ name: c.name, description: c.description, parameters: c.parameters });
      const attachments = await this.resolveAttachments(snap.tenantId, snap.subjectId, modelMessages);

      let text = '';
      const toolCalls: Array<{ id: string; name: string; arguments: unknown }> = [];
      let usage = { input_tokens: 0, output_tokens: 0, cached_input_tokens: 0 };
      // The message row holds exactly the text of the deltas written so far, so a take-over can
      // complete it with content equal to the concatenated deltas.
      let flushed = '';
      const buffer = new DeltaBuffer(async (delta) => {
        run.streamDelta(messageId, delta);
        const flushedText = flushed + delta;
        const saved = await writeMessage('streaming', [{ type: 'text', text: flushedText }]);
        if (!saved) throw new ConcurrencyConflict('run', run.id, run.expectedVersion);
        flushed = flushedText;
      });

      const callSignal = AbortSignal.any([ctx.abort.signal, AbortSignal.timeout(Math.max(1, deadline - Date.now()))]);
      startTimer = setTimeout(() => {
        // Unless a write of the turn is already on its way; a failure reaches the turn's next write.
        if (!written) writeMessage('streaming', []).catch(() => undefined);
      }, MESSAGE_START_DELAY_MS);
      let failure: { code: RunErrorCode; message: string } | null = null;
      const calledAt = performance.now();
      try {
        const provider = this.models.forModel(snap.model);
        const stream = provider.stream({
          model: snap.model,
          runId: snap.id,
          callIndex: effect.call_index,
          instructions: agent?.instructions ?? '',
          messages: modelMessages,
          tools: toolSpecs,
          attachments,
          signal: callSignal,
          deadline,
        });
        // Model output is untrusted text: U+0000 and lone surrogates cannot be stored by PostgreSQL
        // (U+FFFD instead); a surrogate pair split between two deltas stays one character.
        const clean = new TextDeltaSanitizer();
        for await (const ev of stream as AsyncIterable<ModelStreamEvent>) {
          if (ctx.leaseLost) throw new LeaseLost('lease lost');
          if (ev.type === 'text_delta') {
            const delta = clean.push(ev.text);
            text += delta;
            if (delta) await buffer.push(delta);
          } else if (ev.type === 'tool_call') {
            toolCalls.push({ id: ev.id ?? newId('call'), name: sanitizeText(ev.name), arguments: sanitizeJson(ev.arguments ?? {}) });
          } else if (ev.type === 'usage') {
            usage = { input_tokens: ev.input_tokens, output_tokens: ev.output_tokens, cached_input_tokens: ev.cached_input_tokens ?? 0 };
          }
          if (callSignal.aborted) break;
        }
        const tail = clean.end();
        if (tail) {
          text += tail;
          await buffer.push(tail);
        }
        if (callSignal.aborted && !ctx.leaseLost && Date.now() >= deadline) failure = { code: 'model_timeout', message: 'the run deadline passed during the model call' };
      } catch (err) {
        if (err instanceof LeaseLost || ctx.leaseLost) throw new LeaseLost('lease lost');
        if (err instanceof ConcurrencyConflict) {
          buffer.cancel();
          return false;
        }
        if (err instanceof DomainError) failure = { code: 'model_error', message: err.message };
        else if (err instanceof ModelError) failure = { code: err.code, message: err.message };
        else if (callSignal.aborted) failure = Date.now() >= deadline ? { code: 'model_timeout', message: 'the run deadline passed during the model call' } : null;
        else {
          // Not a model's answer but a failure of ours or of the provider client: the run says so
          // generically (its text may be internal: "Maximum call stack size exceeded"); the log has it.
          this.logger.error(`model call of ${snap.id} failed: ${(err as Error)?.stack ?? String(err)}`);
          failure = { code: 'model_error', message: 'the model call failed' };
        }
      }
      this.metrics?.recordModelCall(snap.model, failure ? failure.code : ctx.cancelled ? 'cancelled' : 'ok', (performance.now() - calledAt) / 1000);
      // The tail that is still buffered is written with the completion below (one transaction).
      clearTimeout(startTimer);
      let rest = '';
      try {
        rest = await buffer.takeRest();
      } catch (err) {
        if (err instanceof ConcurrencyConflict) return false;
        throw err;
      }
      if (ctx.leaseLost) throw new LeaseLost('lease lost');
      if (rest) run.streamDelta(messageId, rest);
      // Input steered while the model answered: known to the decider before it decides the turn's end.
      if (ctx.steered) await this.takeSteered(run, ctx);

      const d = run.decide(
        { type: 'model_turn_ended', message_id: messageId, text, tool_calls: toolCalls, usage, failure, aborted: callSignal.aborted, cancel_signalled: ctx.cancelled },
        this.env(run, ctx),
      );
      const ended = d.events.find((e) => e.type === 'turn_ended');
      const status = ended?.type === 'turn_ended' ? ended.status : 'failed';
      const content = ended?.type === 'turn_ended' ? ended.content : [];
      const saved = await writeMessage(status, content);
      // The next turn's context: a completed assistant message is part of it (as stored: jsonb's key order).
      if (saved) ctx.context = status === 'completed' ? [...modelMessages, { role: 'assistant', content: jsonbOrdered(content) as ContentPart[] }] : modelMessages;
      return saved;
    } finally {
      // Whatever way the turn ends, its first write is not started late.
      clearTimeout(startTimer);
    }
  }

  private async readContext(run: Run): Promise<ModelMessage[]> {
    const snap = run.propsForPersistence();
    const history = await this.messages.history(snap.sessionId);
    return contextOf(history, snap).map((m) => ({ role: m.role, content: m.content }));
  }

  /**
   * Closes a model turn that did not finish here (a cancel that landed mid-turn, or a crash / lost
   * lease): the decider says how; its message keeps the text that was streamed.
   */
  private async closeInterruptedTurn(run: Run, ctx: ExecContext, id: string): Promise<boolean> {
    const msg = await this.messages.findById(id);
    const d = run.decide({ type: 'interrupted_turn_read', message_id: id, content: msg?.content ?? [] }, this.env(run, ctx));
    const ended = d.events[0];
    const status = ended.type === 'turn_ended' ? ended.status : 'failed';
    return this.save(run, ctx, { kind: 'update', id, changes: { status, content: msg?.content ?? [] } });
  }

  private async resolveAttachments(tenantId: string, subjectId: string, messages: ModelMessage[]): Promise<ModelAttachment[]> {
    if (!this.attachments) return [];
    const ids = new Set<string>();
    for (const m of messages) for (const p of m.content) if (p.type === 'attachment_ref') ids.add(p.attachment_id);
    const out: ModelAttachment[] = [];
    for (const id of [...ids].slice(-MAX_ATTACHMENTS_IN_CONTEXT)) {
      try {
        const a = await this.attachments.read({ tenantId, subjectId }, id, ATTACHMENT_TEXT_BYTES);
        const att: ModelAttachment = { attachment_id: a.attachment_id, filename: a.filename, media_type: a.media_type, size_bytes: a.size_bytes };
        if (a.text !== undefined) att.text = a.text;
        if (a.media_type.startsWith('image/') && a.bytes) att.image_base64 = a.bytes.toString('base64');
        out.push(att);
      } catch {
        // Gone since the run was accepted (deleted or expired): the model sees only the reference.
      }
    }
    return out;
  }

  // ---- tools -------------------------------------------------------------------------------

  /**
   * Runs a started call, with the retries the decider allows, and commits its outcome with its
   * `tool` message. When the decider says the start must be durable first (a tool that is not
   * idempotent), it runs only once its `tool.started` is committed. Otherwise it starts at once:
   * if it answers within FAST_TOOL_MS, tool.started commits with its outcome (one write fewer);
   * else then, while it runs.
   */
  private async runTool(run: Run, ctx: ExecContext, first: Extract<Effect, { type: 'run_tool' }>): Promise<boolean> {
    const o = run.owner;
    let effect = first;
    for (;;) {
      const call = effect.call;
      let startSave: Promise<boolean> | null = null;
      let startTimer: NodeJS.Timeout | null = null;
      const tool = this.toolOf(ctx, call.tool_name);
      if (effect.commit_start_first) {
        if (!(await this.save(run, ctx))) return false;
      } else {
        startTimer = setTimeout(() => {
          startSave = this.save(run, ctx);
          startSave.catch(() => undefined); // awaited (and rethrown) below
        }, FAST_TOOL_MS);
      }
      const t0 = Date.now();
      const calledAt = performance.now();
      let raw: ToolOutcome;
      try {
        raw = await this.tools.execute(call.tool_name, call.arguments, {
          tenantId: o.tenantId,
          subjectId: o.subjectId,
          sessionId: o.sessionId,
          runId: o.runId,
          toolCallId: call.tool_call_id,
          idempotencyKey: `${o.runId}:${call.tool_call_id}`,
          attempt: call.attempt,
          signal: ctx.abort.signal,
          deadline: run.deadline() ?? Date.now() + run.limits.timeout_ms,
        }, tool ?? undefined);
      } finally {
        if (startTimer) clearTimeout(startTimer);
      }
      this.metrics?.recordToolCall(call.tool_name, raw.ok, (performance.now() - calledAt) / 1000);
      if (startSave !== null && !(await startSave)) return false;
      if (ctx.leaseLost) throw new LeaseLost('lease lost');
      const d = run.decide({ type: 'tool_finished', tool_call_id: call.tool_call_id, result: sanitizeJson(raw), duration_ms: Date.now() - t0, cancel_signalled: ctx.cancelled }, this.env(run, ctx));
      if (d.effect.type === 'run_tool') {
        effect = d.effect;
        continue;
      }
      return this.saveWithToolMessage(run, ctx, d);
    }
  }

  // ---- endings -----------------------------------------------------------------------------

  private async failUnexpectedly(id: string): Promise<void> {
    for (let i = 0; i < 3; i++) {
      const run = await this.runs.findById(id);
      if (!run || run.isTerminal) return;
      run.decide({ type: 'failed_unexpectedly' }, this.env(run));
      try {
        await this.persistence.save(run);
        return;
      } catch (err) {
        if (!(err instanceof ConcurrencyConflict)) throw err;
      }
    }
  }
}
