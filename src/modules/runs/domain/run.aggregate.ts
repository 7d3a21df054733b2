import { DomainError } from '../../../common/errors/domain-error';
import type { ContentPart } from '../../agents/domain/model-provider';
import { NewRunEvent } from '../../events/domain/run-event';
import { decide, DecideEnv, Decision, evolve, Observation, publicEvents, RunEvent, toolResultContent } from './run-decider';
import { isTerminal, RunError, RunStatus, TerminationReason } from './run-status';

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
  /**
   * Steered inputs this run took (`run.input`), each placed in the model context right before
   * the assistant message of the turn that took it (`before`; null until that turn begins).
   */
  inputs: Array<{ message_id: string; before: string | null }>;
  /** `usage.model_calls` when the newest steered input was taken (the scripted model's turn index starts there). */
  input_call_base: number;
  /**
   * Tools the caller declared for this run only (the AG-UI `tools` of a request): offered to the
   * model besides the agent's, always executed by the client (the run waits for their outputs).
   */
  client_tools?: ClientToolSpec[];
}

/** A client tool of one run: what the model is shown; executor `client`, risk `auto`. */
export interface ClientToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** A user message steered to this run (CONTRACT section 7), with the configuration a run for it would get. */
export interface SteeredInput {
  message_id: string;
  /** When it was accepted: a run started for it (this run ended first) is queued as of then. */
  accepted_at: string;
  model: string;
  limits: RunLimits;
  metadata: Record<string, string>;
}

export function emptyRunState(): RunState {
  return { pending: [], streaming_message_id: null, loop_window: [], inputs: [], input_call_base: 0 };
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
  /**
   * Steered inputs not taken yet. Kept in a column of its own: a steer appends to it without
   * changing the run's version; a save removes only what the run took.
   */
  inbox: SteeredInput[];
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
    clientTools?: ClientToolSpec[];
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
        state: input.clientTools?.length ? { ...emptyRunState(), client_tools: input.clientTools.map((t) => ({ ...t })) } : emptyRunState(),
        inbox: [],
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
  markSaved(savedEvents = this.events.length, savedTaken = this.taken.length, savedStatusChanges = this.statusChanges.length): void {
    this.loadedVersion = this.props.version;
    this.dirty = false;
    this.events = this.events.slice(savedEvents);
    this.taken = this.taken.slice(savedTaken);
    this.statusChanges = this.statusChanges.slice(savedStatusChanges);
  }

  /** The statuses the run moved into since the last save, in order (a save writes their integration events). */
  get unsavedStatusChanges(): readonly RunStatus[] {
    return this.statusChanges;
  }
  private statusChanges: RunStatus[] = [];

  /** Epoch ms of the deadline (from started_at), or null before the start. */
  deadline(): number | null {
    return this.props.startedAt ? this.props.startedAt.getTime() + this.props.limits.timeout_ms : null;
  }

  // ---- changes: decider events (run-decider.ts) -------------------------------------------

  /**
   * Decides what follows `observation` (the rules are the decider's), applies the events and
   * records their public events; returns the effect for the interpreter to perform.
   */
  decide(observation: Observation, env: DecideEnv): Decision {
    const d = decide(this.props, observation, env);
    this.apply(d.events, env.now);
    return d;
  }

  /** Applies decider events (evolve) and records the public events they imply. */
  apply(events: readonly RunEvent[], now = Date.now()): void {
    for (const e of events) {
      const before = this.props;
      const next = evolve(before, e);
      if (e.type === 'finished' && before.state.pending.some((p) => p.status === 'awaiting_approval')) this.endedWithOpenApproval = true;
      if (e.type === 'input_taken') this.taken.push(e.message_id);
      if (next.status !== before.status) this.statusChanges.push(next.status);
      this.props = next;
      this.events.push(...publicEvents(before, e, next));
    }
    if (events.length > 0) this.touch(now);
  }

  /** Ids of steered inputs taken since the last save (the save removes them from the inbox column). */
  get takenInputs(): readonly string[] {
    return this.taken;
  }
  private taken: string[] = [];

  /** A coalesced batch of the streaming message's text (CONTRACT section 8: `message.delta`). */
  streamDelta(messageId: string, delta: string): void {
    this.apply([{ type: 'delta_streamed', message_id: messageId, delta }]);
  }

  private touch(now = Date.now()): void {
    this.dirty = true;
    this.props.version = this.loadedVersion + 1;
    this.props.updatedAt = new Date(now);
  }

  // ---- lifecycle -------------------------------------------------------------------------

  start(now: Date): void {
    this.apply([{ type: 'started', at: now.getTime() }], now.getTime());
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

  wait(status: 'waiting_for_approval' | 'waiting_for_tool', reason: 'approval_required' | 'client_tool'): void {
    this.apply([{ type: 'waiting', status, reason }]);
  }

  resume(): void {
    this.apply([{ type: 'resumed' }]);
  }

  /**
   * CONTRACT: queued and waiting runs are cancelled at once; a run in the middle of a model call
   * or tool becomes `cancelling` and the worker finishes it once that step stopped.
   * Returns whether anything changed (a repeated cancel changes nothing).
   */
  requestCancel(requestedBy: string, now: Date): boolean {
    const d = this.decide({ type: 'cancel_requested', requested_by: requestedBy }, { now: now.getTime(), newId: noIds, tool: () => null });
    return d.events.length > 0;
  }

  get cancelRequested(): boolean {
    return this.props.cancelRequestedAt !== null;
  }

  expire(now: Date, error: RunError | null = null): void {
    this.decide({ type: 'expired', error }, { now: now.getTime(), newId: noIds, tool: () => null });
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
    this.apply([{ type: 'finished', status, reason: outcome.reason, error: outcome.error ?? null, final_message_id: outcome.finalMessageId, at: now.getTime() }], now.getTime());
  }

  // ---- approvals and client tools (observations from other requests) -----------------------

  /** A decision on one of its approvals: approve runs the tool, reject gives the model the rejection. Returns whether it resumes. */
  decideApproval(d: { approvalId: string; toolCallId: string; decision: 'approve' | 'reject'; decidedBy: string; reason: string | null }, now: Date): boolean {
    const r = this.decide(
      { type: 'approval_decided', approval_id: d.approvalId, tool_call_id: d.toolCallId, decision: d.decision, decided_by: d.decidedBy, reason: d.reason },
      { now: now.getTime(), newId: noIds, tool: () => null },
    );
    return r.effect.type === 'resume';
  }

  /** The approval a call awaits, if it does. */
  awaitedApproval(toolCallId: string): string | null {
    const p = this.props.state.pending.find((x) => x.tool_call_id === toolCallId);
    return p?.status === 'awaiting_approval' ? (p.approval_id ?? null) : null;
  }

  /**
   * Outputs of client tools; returns the `tool` messages to append (one per output) and whether
   * the run resumes.
   */
  submitClientOutputs(
    outputs: Array<{ tool_call_id: string; output?: unknown; error?: { code?: string; message: string } }>,
    env: Pick<DecideEnv, 'now' | 'newId'>,
  ): { messages: Array<{ id: string; content: ContentPart[] }>; resumes: boolean } {
    const before = this.props;
    const d = this.decide({ type: 'client_tool_outputs', outputs }, { ...env, tool: () => null });
    const messages = d.events.flatMap((e) => {
      if (e.type !== 'tool_finished') return [];
      const call = before.state.pending.find((p) => p.tool_call_id === e.tool_call_id)!;
      return [{ id: e.result_message_id, content: toolResultContent(call, e.result) }];
    });
    return { messages, resumes: d.effect.type === 'resume' };
  }

  get stepCount(): number {
    return this.props.stepCount;
  }

  tokensUsed(): number {
    return this.props.usage.input_tokens + this.props.usage.output_tokens;
  }
}

function noIds(): never {
  throw new Error('this change creates no ids');
}
