import { Injectable } from '@nestjs/common';
import { DbPriority } from '../../../common/database/db-priority';
import { jsonbOrdered } from '../../../common/database/jsonb';
import { ConcurrencyConflict } from '../../../common/errors/domain-error';
import { ContentPart, ModelMessage } from '../../agents/domain/model-provider';
import { MessageStatus, MessageWrite } from '../../sessions/domain/message';
import { LeftoversArrived, RunPersistence } from '../application/run-persistence';
import { Run } from '../domain/run.aggregate';
import { Decision, toolResultContent } from '../domain/run-decider';
import { DeltaBuffer } from './delta-buffer';
import { Execution, LeaseLost } from './execution';

/** An idempotent tool that answers within this commits its tool.started with its outcome. */
export const FAST_TOOL_MS = 20;
/** A model call that completes within this writes its turn's message (and message.started) with its completion. */
export const MESSAGE_START_DELAY_MS = 50;

/**
 * The executor's writes: when a change is committed and with what. Every write is one guarded
 * commit (`RunPersistence`); false means a version conflict (a cancel or decision landed: the
 * caller reloads and decides again). A turn's writes go out in order, coalesced (`TurnWrites`);
 * an idempotent tool's start rides on its outcome when it is fast (`DeferredStart`).
 */
@Injectable()
export class RunWriter {
  constructor(private readonly persistence: RunPersistence) {}

  /** Commits `run`'s changes, with what the same commit writes besides (an approval row, a message). */
  async save(run: Run, ex: Execution, write?: (() => Promise<void>) | MessageWrite): Promise<boolean> {
    if (ex.leaseLost) throw new LeaseLost('lease lost');
    try {
      if (typeof write === 'object') await this.persistence.saveWithMessage(run, write);
      else await this.persistence.save(run, write);
      // run.started is durable (it commits with the first save): the rest is background work.
      DbPriority.lower('background');
      return true;
    } catch (err) {
      ex.context = undefined;
      if (err instanceof ConcurrencyConflict) return false;
      throw err;
    }
  }

  /**
   * Commits a decision with the `tool` message of the call it finished (one per decision, if
   * any); the message then joins this execution's model context.
   */
  async commit(run: Run, ex: Execution, d: Decision): Promise<boolean> {
    const done = d.events.find((e) => e.type === 'tool_finished');
    const call = done?.type === 'tool_finished' ? run.state.pending.find((p) => p.tool_call_id === done.tool_call_id) : undefined;
    if (!done || done.type !== 'tool_finished' || !call) return this.save(run, ex);
    const o = run.owner;
    const content = toolResultContent(call, done.result);
    const saved = await this.save(run, ex, {
      kind: 'append',
      message: { id: done.result_message_id, tenantId: o.tenantId, subjectId: o.subjectId, sessionId: o.sessionId, runId: o.runId, role: 'tool', status: 'completed', content, metadata: {} },
    });
    if (saved && ex.context) ex.context = [...ex.context, { role: 'tool', content: jsonbOrdered(content) as ContentPart[] }];
    return saved;
  }

  /** Commits the close of an interrupted turn (`interrupted_turn_read`'s decision): its message keeps the text that was streamed. */
  closeTurn(run: Run, ex: Execution, d: Decision, messageId: string): Promise<boolean> {
    const ended = d.events[0];
    const status = ended?.type === 'turn_ended' ? ended.status : 'failed';
    const content = ended?.type === 'turn_ended' ? ended.content : [];
    return this.save(run, ex, { kind: 'update', id: messageId, changes: { status, content } });
  }

  /** The writes of one model turn (see TurnWrites). */
  turn(run: Run, ex: Execution, messageId: string, context: ModelMessage[]): TurnWrites {
    return new TurnWrites(this, run, ex, messageId, context);
  }

  /** An idempotent tool's start: committed FAST_TOOL_MS after it started, unless it answered by then (then with its outcome). */
  deferStart(run: Run, ex: Execution): DeferredStart {
    return new DeferredStart(() => this.save(run, ex));
  }
}

/**
 * A model turn's writes. Its message row (and message.started, and the step) is written with the
 * turn's first write: its completion when the model answers within MESSAGE_START_DELAY_MS of
 * being called (one statement fewer per turn), else then, or with its first deltas if they come
 * sooner. Until then a crash leaves nothing of the turn, which is redone; afterwards the row is
 * there for a take-over to close. The writes run one after the other, in order (the first one
 * appends the row, the others update it); after a conflict the later ones write nothing. Deltas
 * are coalesced by a DeltaBuffer; the row holds exactly the text of the deltas written so far, so
 * a take-over can complete it with content equal to the concatenated deltas.
 */
export class TurnWrites {
  private messageSaved = false;
  private written: Promise<boolean> | null = null;
  private startTimer: NodeJS.Timeout | undefined;
  private flushed = '';
  private readonly buffer: DeltaBuffer;

  constructor(
    private readonly writer: RunWriter,
    private readonly run: Run,
    private readonly ex: Execution,
    private readonly messageId: string,
    /** What the model was given: the next turn's context with what this turn commits. */
    private readonly context: ModelMessage[],
  ) {
    this.buffer = new DeltaBuffer(async (delta) => {
      run.streamDelta(messageId, delta);
      const flushedText = this.flushed + delta;
      const saved = await this.write('streaming', [{ type: 'text', text: flushedText }]);
      if (!saved) throw new ConcurrencyConflict('run', run.id, run.expectedVersion);
      this.flushed = flushedText;
    });
  }

  /** The model is called: the message starts at MESSAGE_START_DELAY_MS unless a write of the turn is on its way. */
  armStart(): void {
    this.startTimer = setTimeout(() => {
      // A failure reaches the turn's next write.
      if (!this.written) this.write('streaming', []).catch(() => undefined);
    }, MESSAGE_START_DELAY_MS);
  }

  /** Whatever way the turn ends, its first write is not started late. */
  disarm(): void {
    clearTimeout(this.startTimer);
  }

  /** A clean delta of the model's text (written coalesced: ConcurrencyConflict after a conflict). */
  push(delta: string): Promise<void> | void {
    return this.buffer.push(delta);
  }

  /** Waits for the delta writes on their way and hands back the tail still buffered (it is written with the completion). */
  takeRest(): Promise<string> {
    return this.buffer.takeRest();
  }

  cancel(): void {
    this.buffer.cancel();
  }

  /** Commits the turn's end as decided (`turn_ended`): the message's status and content; a completed one joins the context. */
  async end(d: Decision): Promise<boolean> {
    const ended = d.events.find((e) => e.type === 'turn_ended');
    const status = ended?.type === 'turn_ended' ? ended.status : 'failed';
    const content = ended?.type === 'turn_ended' ? ended.content : [];
    const saved = await this.write(status, content);
    // The next turn's context: a completed assistant message is part of it (as stored: jsonb's key order).
    if (saved) this.ex.context = status === 'completed' ? [...this.context, { role: 'assistant', content: jsonbOrdered(content) as ContentPart[] }] : this.context;
    return saved;
  }

  private write(status: MessageStatus, content: ContentPart[]): Promise<boolean> {
    const next = (this.written ?? Promise.resolve(true)).then((ok) => (ok ? this.persist(status, content) : false));
    // An end refused for leftovers wrote nothing: the turn's writes go on as before it (its end is decided again).
    const chain = next.catch((err: unknown) => {
      if (err instanceof LeftoversArrived) return true;
      throw err;
    });
    chain.catch(() => undefined); // the caller of this write gets the failure (`next`)
    this.written = chain;
    return next;
  }

  private async persist(status: MessageStatus, content: ContentPart[]): Promise<boolean> {
    const o = this.run.owner;
    const write: MessageWrite = this.messageSaved
      ? { kind: 'update', id: this.messageId, changes: status === 'streaming' ? { content } : { status, content } }
      : { kind: 'append', message: { id: this.messageId, tenantId: o.tenantId, subjectId: o.subjectId, sessionId: o.sessionId, runId: o.runId, role: 'assistant', status, content, metadata: {} } };
    const saved = await this.writer.save(this.run, this.ex, write);
    if (saved) this.messageSaved = true;
    return saved;
  }
}

/** A tool start whose commit waits FAST_TOOL_MS: if the tool answers first, the start commits with its outcome. */
export class DeferredStart {
  private saving: Promise<boolean> | null = null;
  private readonly timer: NodeJS.Timeout;

  constructor(save: () => Promise<boolean>) {
    this.timer = setTimeout(() => {
      this.saving = save();
      this.saving.catch(() => undefined); // awaited (and rethrown) by the caller of stop()
    }, FAST_TOOL_MS);
  }

  /** The tool answered (or threw): no start write from now on; the one on its way, if any, to await. */
  stop(): Promise<boolean> | null {
    clearTimeout(this.timer);
    return this.saving;
  }
}
