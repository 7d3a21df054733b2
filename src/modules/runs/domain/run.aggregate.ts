import { DomainError } from '../../../common/errors/domain-error';
import { NewRunEvent, RunEventType } from '../../events/domain/run-event';
import { canMove, isTerminal, RunError, RunStatus, TerminationReason } from './run-status';

export interface RunLimits {
  max_steps: number;
  timeout_ms: number;
  max_total_tokens: number | null;
  max_tool_calls: number;
}

export interface RunUsage {
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  model_calls: number;
  tool_calls: number;
}

export type PendingToolStatus = 'requested' | 'awaiting_approval' | 'awaiting_client' | 'approved' | 'started' | 'completed' | 'failed';

/** A tool call of the current step, as saved in the run's state (the loop resumes from it). */
export interface PendingToolCall {
  tool_call_id: string;
  tool_name: string;
  arguments: unknown;
  risk: 'auto' | 'suggest' | 'approve' | null;
  executor: 'server' | 'client' | null;
  idempotent: boolean;
  status: PendingToolStatus;
  attempt: number;
  approval_id?: string;
  /** Set when approval was rejected: the model gets this reason as the tool result. */
  rejection?: { reason: string | null; decided_by: string };
  ok?: boolean;
  result?: unknown;
  error?: { code: string; message: string; retryable?: boolean };
}

/** The loop's saved state: enough to resume after a crash, an approval or a client tool. */
export interface RunState {
  pending: PendingToolCall[];
  /** The assistant message being streamed (set between message.started and message.completed). */
  streaming_message_id: string | null;
  /** Signatures `tool|args|result` of the most recent tool results, for loop detection. */
  loop_window: string[];
}

export interface RunProps {
  id: string;
  tenantId: string;
  subjectId: string;
  sessionId: string;
  agent: { id: string; version: string };
  model: string;
  status: RunStatus;
  terminationReason: TerminationReason | null;
  error: RunError | null;
  userMessageId: string;
  finalMessageId: string | null;
  stepCount: number;
  usage: RunUsage;
  limits: RunLimits;
  metadata: Record<string, string>;
  state: RunState;
  version: number;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  cancelRequestedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  queueExpiresAt: Date;
}

export const DEFAULT_LIMITS: RunLimits = { max_steps: 10, timeout_ms: 300_000, max_total_tokens: null, max_tool_calls: 50 };

export function emptyUsage(): RunUsage {
  return { input_tokens: 0, output_tokens: 0, cached_input_tokens: 0, model_calls: 0, tool_calls: 0 };
}

/**
 * The Run aggregate: the status machine of CONTRACT section 7 (terminal is final), its
 * counters, limits and saved loop state. Every change records the public events it implies;
 * the repository saves row + events in one transaction, conditional on `version`.
 */
export class Run {
  private props: RunProps;
  private loadedVersion: number;
  private events: NewRunEvent[] = [];

  private constructor(props: RunProps, loadedVersion: number) {
    this.props = props;
    this.loadedVersion = loadedVersion;
  }

  static create(input: {
    id: string;
    tenantId: string;
    subjectId: string;
    sessionId: string;
    agent: { id: string; version: string };
    model: string;
    userMessageId: string;
    limits: RunLimits;
    metadata: Record<string, string>;
    now: Date;
    queueTtlMs: number;
  }): Run {
    return new Run(
      {
        id: input.id,
        tenantId: input.tenantId,
        subjectId: input.subjectId,
        sessionId: input.sessionId,
        agent: { ...input.agent },
        model: input.model,
        status: 'queued',
        terminationReason: null,
        error: null,
        userMessageId: input.userMessageId,
        finalMessageId: null,
        stepCount: 0,
        usage: emptyUsage(),
        limits: { ...input.limits },
        metadata: { ...input.metadata },
        state: { pending: [], streaming_message_id: null, loop_window: [] },
        version: 1,
        leaseOwner: null,
        leaseExpiresAt: null,
        cancelRequestedAt: null,
        createdAt: input.now,
        updatedAt: input.now,
        startedAt: null,
        finishedAt: null,
        queueExpiresAt: new Date(input.now.getTime() + input.queueTtlMs),
      },
      0,
    );
  }

  static restore(props: RunProps): Run {
    return new Run(structuredClone(props), props.version);
  }

  get id(): string {
    return this.props.id;
  }
  get status(): RunStatus {
    return this.props.status;
  }
  get version(): number {
    return this.props.version;
  }
  get expectedVersion(): number {
    return this.loadedVersion;
  }
  get isNew(): boolean {
    return this.loadedVersion === 0;
  }
  get isTerminal(): boolean {
    return isTerminal(this.props.status);
  }
  get state(): RunState {
    return this.props.state;
  }
  get limits(): RunLimits {
    return this.props.limits;
  }
  get usage(): RunUsage {
    return this.props.usage;
  }
  get owner() {
    return { tenantId: this.props.tenantId, subjectId: this.props.subjectId, sessionId: this.props.sessionId, runId: this.props.id };
  }
  snapshot(): Readonly<RunProps> {
    return structuredClone(this.props);
  }
  /**
   * The props themselves, not a copy: for the mapper that serialises them into a row at once
   * (a deep copy per save was ~1.4% of a B1 run's CPU). Never to be kept or changed.
   */
  propsForPersistence(): Readonly<RunProps> {
    return this.props;
  }
  pullEvents(): NewRunEvent[] {
    const out = this.events;
    this.events = [];
    return out;
  }
  /** The events recorded since the last save, kept until `markSaved` (a failed write keeps them). */
  get unsavedEvents(): readonly NewRunEvent[] {
    return this.events;
  }
  get hasChanges(): boolean {
    return this.events.length > 0 || this.dirty;
  }
  private dirty = false;

  /**
   * After a successful conditional write: the saved version becomes the next condition, and the
   * first `savedEvents` unsaved events (those the write took) are no longer pending.
   */
  markSaved(savedEvents = this.events.length): void {
    this.loadedVersion = this.props.version;
    this.dirty = false;
    this.events = this.events.slice(savedEvents);
  }

  /** Epoch ms of the deadline (from started_at), or null before the start. */
  deadline(): number | null {
    return this.props.startedAt ? this.props.startedAt.getTime() + this.props.limits.timeout_ms : null;
  }

  record(type: RunEventType, data: Record<string, unknown>): void {
    this.events.push({ type, data });
    this.touch();
  }

  private touch(): void {
    this.dirty = true;
    this.props.version = this.loadedVersion + 1;
    this.props.updatedAt = new Date();
  }

  private move(to: RunStatus): void {
    if (!canMove(this.props.status, to)) {
      throw new DomainError('run_finished', `a ${this.props.status} run cannot become ${to}`, { run_id: this.props.id, status: this.props.status }, this.props.id);
    }
    this.props.status = to;
    this.touch();
  }

  // ---- lifecycle -------------------------------------------------------------------------

  start(now: Date): void {
    this.move('running');
    this.props.startedAt = now;
    this.record('run.started', { status: 'running' });
  }

  /** A claimed run (first start, crash take-over or resume after a decision) gets the lease. */
  lease(owner: string, until: Date): void {
    this.props.leaseOwner = owner;
    this.props.leaseExpiresAt = until;
    this.touch();
  }

  releaseLease(): void {
    this.props.leaseOwner = null;
    this.props.leaseExpiresAt = null;
    this.touch();
  }

  wait(status: 'waiting_for_approval' | 'waiting_for_tool', reason: string): void {
    this.move(status);
    this.props.leaseOwner = null;
    this.props.leaseExpiresAt = null;
    this.record('run.waiting', { status, reason });
  }

  resume(): void {
    this.move('running');
    this.record('run.resumed', { status: 'running' });
  }

  /**
   * CONTRACT: queued and waiting runs are cancelled at once; a run in the middle of a model call
   * or tool becomes `cancelling` and the worker finishes it once that step stopped.
   * Returns whether anything changed (a repeated cancel changes nothing).
   */
  requestCancel(requestedBy: string, now: Date): boolean {
    const s = this.props.status;
    if (s === 'cancelled' || s === 'cancelling') return false;
    if (isTerminal(s)) {
      throw new DomainError('run_finished', `the run is already ${s}`, { run_id: this.props.id, status: s }, this.props.id);
    }
    this.props.cancelRequestedAt = now;
    this.record('run.cancel_requested', { requested_by: requestedBy });
    if (s === 'running') {
      this.move('cancelling');
      return true;
    }
    // queued, waiting_for_approval, waiting_for_tool: nothing is executing.
    this.finish('cancelled', {}, now);
    return true;
  }

  get cancelRequested(): boolean {
    return this.props.cancelRequestedAt !== null;
  }

  expire(now: Date, error: RunError | null = null): void {
    this.finish('expired', { error }, now);
  }

  /**
   * Whether this run ended (here, since it was loaded) while a tool call awaited approval: its
   * pending approval rows must be closed with it. (An approval row is pending exactly while the
   * run's call is `awaiting_approval`: both change in one transaction.)
   */
  get endedAwaitingApproval(): boolean {
    return this.endedWithOpenApproval;
  }
  private endedWithOpenApproval = false;

  /** Ends the run: `usage` then `run.finished`, exactly once. */
  finish(
    status: 'completed' | 'failed' | 'cancelled' | 'expired' | 'terminated',
    outcome: { reason?: TerminationReason; error?: RunError | null; finalMessageId?: string | null },
    now: Date,
  ): void {
    if (status === 'cancelled' && this.props.status === 'running') this.move('cancelling');
    this.move(status);
    this.props.terminationReason = status === 'terminated' ? (outcome.reason ?? null) : null;
    this.props.error = outcome.error ?? null;
    if (outcome.finalMessageId !== undefined) this.props.finalMessageId = outcome.finalMessageId;
    this.props.finishedAt = now;
    this.props.leaseOwner = null;
    this.props.leaseExpiresAt = null;
    if (this.props.state.pending.some((p) => p.status === 'awaiting_approval')) this.endedWithOpenApproval = true;
    this.props.state.pending = this.props.state.pending.filter((p) => p.status === 'completed' || p.status === 'failed');
    this.props.state.streaming_message_id = null;
    this.record('usage', { ...this.props.usage });
    this.record('run.finished', {
      status,
      final_message_id: this.props.finalMessageId,
      termination_reason: this.props.terminationReason,
      error: this.props.error,
      usage: { ...this.props.usage },
    });
  }

  // ---- loop bookkeeping --------------------------------------------------------------------

  beginStep(): void {
    this.props.stepCount += 1;
    this.touch();
  }

  /** A model turn interrupted by a crash is redone: it does not count as a step. */
  abandonStep(): void {
    if (this.props.stepCount > 0) this.props.stepCount -= 1;
    this.touch();
  }

  addModelUsage(u: { input_tokens: number; output_tokens: number; cached_input_tokens?: number }): void {
    this.props.usage.input_tokens += u.input_tokens;
    this.props.usage.output_tokens += u.output_tokens;
    this.props.usage.cached_input_tokens += u.cached_input_tokens ?? 0;
    this.touch();
  }

  countModelCall(): void {
    this.props.usage.model_calls += 1;
    this.touch();
  }

  countToolCall(): void {
    this.props.usage.tool_calls += 1;
    this.touch();
  }

  get stepCount(): number {
    return this.props.stepCount;
  }

  setStreamingMessage(id: string | null): void {
    this.props.state.streaming_message_id = id;
    this.touch();
  }

  setPending(pending: PendingToolCall[]): void {
    this.props.state.pending = pending;
    this.touch();
  }

  updatePending(id: string, patch: Partial<PendingToolCall>): PendingToolCall {
    const p = this.props.state.pending.find((x) => x.tool_call_id === id);
    if (!p) throw new Error(`no pending tool call ${id}`);
    Object.assign(p, patch);
    this.touch();
    return p;
  }

  /** Loop detection: true when the last 3 results are the same signature. */
  pushLoopSignature(sig: string): boolean {
    const w = [...this.props.state.loop_window, sig].slice(-3);
    this.props.state.loop_window = w;
    this.touch();
    return w.length === 3 && w.every((x) => x === sig);
  }

  setFinalMessage(id: string): void {
    this.props.finalMessageId = id;
    this.touch();
  }

  tokensUsed(): number {
    return this.props.usage.input_tokens + this.props.usage.output_tokens;
  }
}
