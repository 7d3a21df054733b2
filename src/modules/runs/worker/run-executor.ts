import { Injectable, Logger, Optional } from '@nestjs/common';
import { AppConfig } from '../../../common/config/app-config';
import { DbPriority } from '../../../common/database/db-priority';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { ConcurrencyConflict, DomainError } from '../../../common/errors/domain-error';
import { newId } from '../../../common/ids/ids';
import { jsonbOrdered } from '../../../common/database/jsonb';
import { Metrics } from '../../../common/metrics/metrics';
import { AgentCatalog } from '../../agents/domain/agent-definition';
import { ContentPart, ModelAttachment, ModelError, ModelMessage, ModelRouter, ModelStreamEvent, ToolSpec } from '../../agents/domain/model-provider';
import { AttachmentReader, ToolOutcome, ToolRegistry } from '../../agents/domain/tool';
import { sanitizeJson, sanitizeText, TextDeltaSanitizer } from '../../../common/text/unsafe-text';
import { canonicalJson } from '../../idempotency/domain/fingerprint';
import { MessageStatus, MessageWrite } from '../../sessions/domain/message';
import { MessageRepository } from '../../sessions/domain/message.repository';
import { RunPersistence } from '../application/run-persistence';
import { RunSignals } from '../application/run-signals';
import { ApprovalGate } from '../domain/approval-gate';
import { PendingToolCall, Run } from '../domain/run.aggregate';
import { RunRepository } from '../domain/run.repository';
import { RunErrorCode } from '../domain/run-status';
import { DeltaBuffer } from './delta-buffer';

const MAX_TOOL_ATTEMPTS = 3;
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
  /**
   * What the model saw in this execution's last turn plus the messages this execution committed
   * since (a completed assistant message, tool results), as a read of the history would give
   * them: the next turn does not read the history again. Cleared by a conflict (someone else
   * changed the run: the next turn reads).
   */
  context?: ModelMessage[];
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
    private readonly agents: AgentCatalog,
    private readonly models: ModelRouter,
    private readonly tools: ToolRegistry,
    @Optional() private readonly approvals?: ApprovalGate,
    @Optional() private readonly attachments?: AttachmentReader,
    @Optional() private readonly metrics?: Metrics,
  ) {}

  /** Executes a run this node has leased until it finishes, waits, or the lease is lost. */
  async execute(initial: Run): Promise<Exit> {
    const ctx: ExecContext = { abort: new AbortController(), cancelled: false, leaseLost: false };
    const onCancel = () => {
      ctx.cancelled = true;
      ctx.abort.abort(new Error('cancelled'));
    };
    const offCancel = this.signals.onCancel(initial.id, onCancel);
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

  /** Saves; on a version conflict (a cancel or decision landed) the caller reloads and re-decides. */
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

  private async loop(initial: Run, ctx: ExecContext): Promise<Exit> {
    let run = initial;
    for (let guard = 0; guard < 10_000; guard++) {
      if (ctx.leaseLost) return 'lease_lost';
      if (run.isTerminal) return 'finished';
      if (run.status === 'waiting_for_approval' || run.status === 'waiting_for_tool') return 'waiting';

      if (run.status === 'queued') {
        // Not saved here: run.started commits with the next step's first write (a model turn
        // writes it at once, on its own); a conflict there reloads the run as usual.
        run.start(new Date());
        continue;
      }

      if (run.state.streaming_message_id) {
        // A model turn was interrupted (crash or lease loss): close its message with the text
        // that was streamed, so every started message is completed, and redo the turn.
        if (!(await this.closeInterruptedMessage(run, ctx))) run = await this.reload(run.id);
        continue;
      }

      if (run.status === 'cancelling' || run.cancelRequested || ctx.cancelled) {
        if (!(await this.finishCancelled(run, ctx))) run = await this.reload(run.id);
        continue;
      }

      const deadline = run.deadline() ?? Date.now() + run.limits.timeout_ms;
      if (Date.now() >= deadline) {
        run.finish('terminated', { reason: 'deadline' }, new Date());
        if (!(await this.save(run, ctx))) run = await this.reload(run.id);
        continue;
      }

      const open = run.state.pending.filter((p) => p.status !== 'completed' && p.status !== 'failed');
      if (run.state.pending.length > 0 && open.length === 0) {
        // Every call of the turn is resolved. Not saved on its own: it commits with the next
        // step's write (a crash before that clears it again here).
        run.setPending([]);
        continue;
      }
      if (open.length > 0) {
        const r = await this.toolStep(run, open[0], ctx, deadline);
        if (r === 'conflict') run = await this.reload(run.id);
        else if (r === 'waiting') return 'waiting';
        continue;
      }

      if (run.stepCount >= run.limits.max_steps) {
        run.finish('terminated', { reason: 'max_steps' }, new Date());
        if (!(await this.save(run, ctx))) run = await this.reload(run.id);
        continue;
      }
      if (run.limits.max_total_tokens !== null && run.tokensUsed() >= run.limits.max_total_tokens) {
        run.finish('terminated', { reason: 'token_budget' }, new Date());
        if (!(await this.save(run, ctx))) run = await this.reload(run.id);
        continue;
      }

      const ok = await this.modelTurn(run, ctx, deadline);
      if (!ok) run = await this.reload(run.id);
    }
    throw new Error('loop guard exceeded');
  }

  // ---- model turn ------------------------------------------------------------------------

  private async modelTurn(run: Run, ctx: ExecContext, deadline: number): Promise<boolean> {
    const snap = run.snapshot();
    const agent = this.agents.get(snap.agent.id, snap.agent.version);
    // A client waits for run.started: it is committed at once, on its own.
    if (run.unsavedEvents.some((e) => e.type === 'run.started') && !(await this.save(run, ctx))) return false;
    const messageId = newId('msg');
    run.beginStep();
    run.setStreamingMessage(messageId);
    run.record('message.started', { message_id: messageId, role: 'assistant' });
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

    try {
      // The model sees the session's history up to this run's own input plus what this run added;
      // input of runs queued behind it is not part of its context. Read once per execution.
      const modelMessages: ModelMessage[] = ctx.context ?? (await this.readContext(snap));
      const toolSpecs: ToolSpec[] = (agent?.tools ?? [])
        .map((name) => this.tools.get(name))
        .filter((t): t is NonNullable<typeof t> => t !== null)
        .map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
      const attachments = await this.resolveAttachments(snap.tenantId, snap.subjectId, modelMessages);

      let text = '';
      const toolCalls: Array<{ id: string; name: string; arguments: unknown }> = [];
      let usage = { input_tokens: 0, output_tokens: 0, cached_input_tokens: 0 };
      // The message row holds exactly the text of the deltas written so far, so a take-over can
      // complete it with content equal to the concatenated deltas.
      let flushed = '';
      const buffer = new DeltaBuffer(async (delta) => {
        run.record('message.delta', { message_id: messageId, content_index: 0, delta });
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
          callIndex: snap.usage.model_calls,
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
        if (callSignal.aborted && !ctx.leaseLost) {
          failure = Date.now() >= deadline ? { code: 'model_timeout', message: 'the run deadline passed during the model call' } : null;
        }
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
      if (rest) run.record('message.delta', { message_id: messageId, content_index: 0, delta: rest });

      const content: ContentPart[] = [];
      if (text) content.push({ type: 'text', text });
      for (const c of toolCalls) content.push({ type: 'tool_call', tool_call_id: c.id, tool_name: c.name, arguments: c.arguments });
      const interruptedByCancel = ctx.cancelled && (failure === null || callSignal.aborted) && Date.now() < deadline;
      const hitDeadline = Date.now() >= deadline && (failure !== null || callSignal.aborted);
      const status = failure || interruptedByCancel || hitDeadline ? (interruptedByCancel ? 'cancelled' : 'failed') : 'completed';

      run.record('message.completed', { message_id: messageId, content });
      run.setStreamingMessage(null);
      run.countModelCall();
      run.addModelUsage(usage);
      const now = new Date();
      if (interruptedByCancel) {
        run.finish('cancelled', {}, now);
      } else if (hitDeadline) {
        run.finish('terminated', { reason: 'deadline' }, now);
      } else if (failure) {
        run.finish('failed', { error: failure }, now);
      } else if (run.limits.max_total_tokens !== null && run.tokensUsed() > run.limits.max_total_tokens) {
        // Over the token budget: never reported completed, and no tool of this turn runs.
        run.finish('terminated', { reason: 'token_budget', finalMessageId: toolCalls.length === 0 ? messageId : null }, now);
      } else if (toolCalls.length === 0) {
        run.finish('completed', { finalMessageId: messageId }, now);
      } else {
        const pending: PendingToolCall[] = toolCalls.map((c) => {
          const def = this.tools.get(c.name);
          return {
            tool_call_id: c.id,
            tool_name: c.name,
            arguments: c.arguments,
            risk: def?.risk ?? null,
            executor: def?.executor ?? null,
            idempotent: def?.idempotent ?? false,
            status: 'requested',
            attempt: 0,
          };
        });
        run.setPending(pending);
        for (const p of pending) {
          run.record('tool.requested', { tool_call_id: p.tool_call_id, tool_name: p.tool_name, arguments: p.arguments, risk: p.risk ?? 'auto' });
        }
      }
      const saved = await writeMessage(status, content);
      // The next turn's context: a completed assistant message is part of it (as stored: jsonb's key order).
      if (saved) ctx.context = status === 'completed' ? [...modelMessages, { role: 'assistant', content: jsonbOrdered(content) as ContentPart[] }] : modelMessages;
      return saved;
    } finally {
      // Whatever way the turn ends, its first write is not started late.
      clearTimeout(startTimer);
    }
  }

  private async readContext(snap: ReturnType<Run['snapshot']>): Promise<ModelMessage[]> {
    const history = await this.messages.history(snap.sessionId);
    const inputSeq = history.find((m) => m.id === snap.userMessageId)?.sequence ?? Number.MAX_SAFE_INTEGER;
    return history
      .filter((m) => m.sequence <= inputSeq || m.runId === snap.id)
      .filter((m) => m.role !== 'assistant' || m.status === 'completed')
      .map((m) => ({ role: m.role, content: m.content }));
  }

  /**
   * Closes a model turn that did not finish here: a cancel that landed mid-turn (the call was
   * made: it counts, and the message is `cancelled`), or a crash / lost lease (the turn is redone:
   * the message is `failed` and the step is not counted twice).
   */
  private async closeInterruptedMessage(run: Run, ctx: ExecContext): Promise<boolean> {
    const id = run.state.streaming_message_id!;
    const msg = await this.messages.findById(id);
    const content = msg?.content ?? [];
    const cancelled = run.cancelRequested || run.status === 'cancelling';
    run.record('message.completed', { message_id: id, content });
    run.setStreamingMessage(null);
    if (cancelled) run.countModelCall();
    else run.abandonStep();
    return this.save(run, ctx, { kind: 'update', id, changes: { status: cancelled ? 'cancelled' : 'failed', content } });
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

  private async toolStep(run: Run, p: PendingToolCall, ctx: ExecContext, deadline: number): Promise<'continue' | 'waiting' | 'conflict'> {
    const def = this.tools.get(p.tool_name);
    switch (p.status) {
      case 'awaiting_approval':
      case 'awaiting_client':
        // A decision or client output resumed the run without resolving this call: wait again.
        run.wait(p.status === 'awaiting_approval' ? 'waiting_for_approval' : 'waiting_for_tool', p.status === 'awaiting_approval' ? 'approval_required' : 'client_tool');
        return (await this.save(run, ctx)) ? 'waiting' : 'conflict';
      case 'started':
        if (def?.idempotent) return this.runTool(run, p, ctx, deadline);
        // A crash interrupted a non-idempotent tool: its effect is unknown, never guessed.
        return this.recordOutcome(run, p, ctx, { ok: false, error: { code: 'outcome_unknown' as never, message: 'the tool was interrupted and may or may not have taken effect', retryable: false } }, 0);
      case 'approved':
        return this.runTool(run, p, ctx, deadline);
      case 'requested':
        break;
      default:
        return 'continue';
    }
    if (p.rejection) {
      return this.recordOutcome(run, p, ctx, { ok: false, error: { code: 'tool_failed', message: `rejected by ${p.rejection.decided_by}${p.rejection.reason ? `: ${p.rejection.reason}` : ''}`, retryable: false } }, 0, true);
    }
    if (def?.risk === 'approve') {
      if (!this.approvals) {
        return this.recordOutcome(run, p, ctx, { ok: false, error: { code: 'tool_failed', message: 'approvals are not available', retryable: false } }, 0, true);
      }
      const gate = this.approvals;
      let opened: { approvalId: string; expiresAt: Date } | null = null;
      const saved = await this.save(run, ctx, async () => {
        opened = await gate.open(run, p);
        run.updatePending(p.tool_call_id, { status: 'awaiting_approval', approval_id: opened.approvalId });
        run.wait('waiting_for_approval', 'approval_required');
      });
      return saved && opened ? 'waiting' : 'conflict';
    }
    if (def?.executor === 'client') {
      // Handed to the client: from here on it is executing (tool.started), until tool_outputs.
      run.countToolCall();
      run.updatePending(p.tool_call_id, { status: 'awaiting_client', attempt: 1 });
      run.record('tool.started', { tool_call_id: p.tool_call_id, tool_name: p.tool_name, attempt: 1 });
      run.wait('waiting_for_tool', 'client_tool');
      return (await this.save(run, ctx)) ? 'waiting' : 'conflict';
    }
    if (def && run.usage.tool_calls >= run.limits.max_tool_calls) {
      run.finish('terminated', { reason: 'tool_budget' }, new Date());
      return (await this.save(run, ctx)) ? 'continue' : 'conflict';
    }
    return this.runTool(run, p, ctx, deadline);
  }

  private async runTool(run: Run, p: PendingToolCall, ctx: ExecContext, deadline: number): Promise<'continue' | 'waiting' | 'conflict'> {
    const snap = run.snapshot();
    const idempotent = this.tools.get(p.tool_name)?.idempotent === true;
    let attempt = p.attempt;
    for (;;) {
      attempt += 1;
      if (attempt === 1) run.countToolCall();
      run.updatePending(p.tool_call_id, { status: 'started', attempt });
      run.record('tool.started', { tool_call_id: p.tool_call_id, tool_name: p.tool_name, attempt });
      // A non-idempotent tool runs only once its start is durable (a crash after that makes its
      // outcome unknown, never re-run). An idempotent one starts at once: if it answers within
      // FAST_TOOL_MS, tool.started commits with its outcome (one transaction fewer); otherwise
      // tool.started is committed then, while it runs. A crash before that commit re-runs it.
      let startSave: Promise<boolean> | null = null;
      let startTimer: NodeJS.Timeout | null = null;
      if (!idempotent) {
        if (!(await this.save(run, ctx))) return 'conflict';
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
        raw = await this.tools.execute(p.tool_name, p.arguments, {
          tenantId: snap.tenantId,
          subjectId: snap.subjectId,
          sessionId: snap.sessionId,
          runId: snap.id,
          toolCallId: p.tool_call_id,
          idempotencyKey: `${snap.id}:${p.tool_call_id}`,
          attempt,
          signal: ctx.abort.signal,
          deadline,
        });
      } finally {
        if (startTimer) clearTimeout(startTimer);
      }
      this.metrics?.recordToolCall(p.tool_name, raw.ok, (performance.now() - calledAt) / 1000);
      if (startSave !== null && !(await startSave)) return 'conflict';
      if (ctx.leaseLost) throw new LeaseLost('lease lost');
      const outcome = sanitizeJson(raw);
      const retry = !outcome.ok && outcome.error.retryable && attempt < MAX_TOOL_ATTEMPTS && !ctx.cancelled && Date.now() < deadline;
      if (!retry) return this.recordOutcome(run, p, ctx, outcome, Date.now() - t0);
    }
  }

  private async recordOutcome(
    run: Run,
    p: PendingToolCall,
    ctx: ExecContext,
    outcome: ToolOutcome,
    durationMs: number,
    notStarted = false,
  ): Promise<'continue' | 'conflict'> {
    const snap = run.snapshot();
    if (notStarted && !p.rejection) {
      // Keep the order rule (completed/failed after requested and started) for calls that never ran.
      run.record('tool.started', { tool_call_id: p.tool_call_id, tool_name: p.tool_name, attempt: 0 });
    }
    if (outcome.ok) {
      run.updatePending(p.tool_call_id, { status: 'completed', ok: true, result: outcome.result });
      run.record('tool.completed', { tool_call_id: p.tool_call_id, tool_name: p.tool_name, result: outcome.result, duration_ms: durationMs });
    } else {
      run.updatePending(p.tool_call_id, { status: 'failed', ok: false, error: outcome.error });
      if (!p.rejection) {
        run.record('tool.failed', { tool_call_id: p.tool_call_id, tool_name: p.tool_name, error: outcome.error, duration_ms: durationMs });
      }
    }
    const resultPart: ContentPart = outcome.ok
      ? { type: 'tool_result', tool_call_id: p.tool_call_id, tool_name: p.tool_name, ok: true, result: outcome.result }
      : { type: 'tool_result', tool_call_id: p.tool_call_id, tool_name: p.tool_name, ok: false, error: { code: outcome.error.code, message: outcome.error.message } };
    const signature = `${p.tool_name}|${canonicalJson(p.arguments ?? {})}|${canonicalJson(outcome.ok ? outcome.result : outcome.error)}`;
    if (run.pushLoopSignature(signature)) {
      run.finish('terminated', { reason: 'loop_detected' }, new Date());
    }
    const saved = await this.save(run, ctx, {
      kind: 'append',
      message: {
        id: newId('msg'),
        tenantId: snap.tenantId,
        subjectId: snap.subjectId,
        sessionId: snap.sessionId,
        runId: snap.id,
        role: 'tool',
        status: 'completed',
        content: [resultPart],
        metadata: {},
      },
    });
    if (saved && ctx.context) ctx.context = [...ctx.context, { role: 'tool', content: jsonbOrdered([resultPart]) as ContentPart[] }];
    return saved ? 'continue' : 'conflict';
  }

  // ---- endings -----------------------------------------------------------------------------

  private async finishCancelled(run: Run, ctx: ExecContext): Promise<boolean> {
    // Tools that were started on a node that died while cancelling have an unknown outcome.
    for (const p of run.state.pending) {
      if (p.status === 'started') {
        run.updatePending(p.tool_call_id, { status: 'failed', ok: false, error: { code: 'outcome_unknown', message: 'interrupted by cancellation' } });
        run.record('tool.failed', { tool_call_id: p.tool_call_id, tool_name: p.tool_name, error: { code: 'outcome_unknown', message: 'interrupted by cancellation', retryable: false }, duration_ms: 0 });
      }
    }
    run.finish('cancelled', {}, new Date());
    return this.save(run, ctx);
  }

  private async failUnexpectedly(id: string): Promise<void> {
    for (let i = 0; i < 3; i++) {
      const run = await this.runs.findById(id);
      if (!run || run.isTerminal) return;
      if (run.state.streaming_message_id) {
        run.record('message.completed', { message_id: run.state.streaming_message_id, content: [] });
        run.setStreamingMessage(null);
      }
      run.finish('failed', { error: { code: 'internal_error', message: 'the run failed unexpectedly' } }, new Date());
      try {
        await this.persistence.save(run);
        return;
      } catch (err) {
        if (!(err instanceof ConcurrencyConflict)) throw err;
      }
    }
  }
}
