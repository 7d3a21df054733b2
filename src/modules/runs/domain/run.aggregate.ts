import { NewRunEvent } from '../../events/domain/run-event';
import { decide, DecideEnv, Decision, evolve, Observation, RunEvent, SubagentCancelReason, TurnUsage } from './run-decider';
import { publicEvents } from './run-public-events';
import { ClientToolSpec, SteeredInput, emptyLoopState, emptyUsage, LoopState, RunLimits, RunProps, RunState, RunUsage } from './run-state';
import { isTerminal, RunStatus } from './run-status';

// The run's value types live in run-state.ts (the decider's too); here for the modules that name them with the aggregate.
export * from './run-state';

/**
 * The Run aggregate, thin: the decider's state, the version it was read at, and the changes not
 * committed yet (the public events and what a commit writes besides the row). Every change is a
 * decision (`decide`): the rules are run-decider.ts's; the repository commits row + events in one
 * statement, conditional on the version.
 */
export class Run {
  private events: NewRunEvent[] = [];
  private dirty = false;
  private version_: number;
  private taken: string[] = [];
  private statusChanges: RunStatus[] = [];
  private spent: Array<{ message_id: string; usage: TurnUsage }> = [];
  private endedWithOpenApproval = false;
  /** Set by the claim of a queued run whose owner no longer has a valid key (see `decideStart`). */
  private ownerAccessRevoked = false;
  /** Commits so far (`markSaved`): a `mark` is good only until the next one. */
  private saves = 0;

  private constructor(
    private current: RunState,
    private loadedVersion: number,
  ) {
    this.version_ = loadedVersion === 0 ? 1 : loadedVersion;
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
    /** Steered inputs it starts with (a follow-up run: the input its ended run left, after the first). */
    inbox?: SteeredInput[];
    /** A subagent's run: the parent run it reports its end to (CONTRACT 16). */
    parent?: { run_id: string; subagent_id: string };
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
        state: {
          ...emptyLoopState(),
          ...(input.clientTools?.length ? { client_tools: input.clientTools.map((t) => ({ ...t })) } : {}),
          ...(input.parent ? { parent: { ...input.parent } } : {}),
        },
        inbox: (input.inbox ?? []).map((i) => ({ ...i })),
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
    const { version, ...state } = structuredClone(props);
    return new Run(state, version);
  }

  get id(): string {
    return this.current.id;
  }
  get status(): RunStatus {
    return this.current.status;
  }
  /** The version this run has once its changes are committed. */
  get version(): number {
    return this.version_;
  }
  /** The version the commit is conditional on (0: a new run). */
  get expectedVersion(): number {
    return this.loadedVersion;
  }
  get isNew(): boolean {
    return this.loadedVersion === 0;
  }
  get isTerminal(): boolean {
    return isTerminal(this.current.status);
  }
  /** The loop's saved state (pending tool calls, the open turn, client tools). */
  get state(): LoopState {
    return this.current.state;
  }
  get limits(): RunLimits {
    return this.current.limits;
  }
  get usage(): RunUsage {
    return this.current.usage;
  }
  get owner() {
    return { tenantId: this.current.tenantId, subjectId: this.current.subjectId, sessionId: this.current.sessionId, runId: this.current.id };
  }
  snapshot(): Readonly<RunProps> {
    return structuredClone({ ...this.current, version: this.version_ });
  }
  /**
   * The state itself, not a copy: for the mapper that serialises it into a row at once (a deep
   * copy per save was ~1.4% of a B1 run's CPU). Never to be kept or changed.
   */
  propsForPersistence(): Readonly<RunState> {
    return this.current;
  }
  /** The events recorded since the last save, kept until `markSaved` (a failed write keeps them). */
  get unsavedEvents(): readonly NewRunEvent[] {
    return this.events;
  }
  get hasChanges(): boolean {
    return this.events.length > 0 || this.dirty;
  }

  /**
   * After a successful conditional write: the saved version becomes the next condition, and the
   * first `savedEvents` unsaved events (those the write took) are no longer pending.
   */
  markSaved(
    savedEvents = this.events.length,
    savedTaken = this.taken.length,
    savedStatusChanges = this.statusChanges.length,
    savedSpend = this.spent.length,
  ): void {
    this.loadedVersion = this.version_;
    this.saves++;
    this.dirty = false;
    this.childCancels = [];
    this.childCloses = [];
    this.childStarts = [];
    this.events = this.events.slice(savedEvents);
    this.taken = this.taken.slice(savedTaken);
    this.statusChanges = this.statusChanges.slice(savedStatusChanges);
    this.spent = this.spent.slice(savedSpend);
  }

  /** The statuses the run moved into since the last save, in order (a save writes their integration events). */
  get unsavedStatusChanges(): readonly RunStatus[] {
    return this.statusChanges;
  }

  /**
   * The model calls whose turns ended (with tokens) since the last save: the save records what
   * each cost (the usage module's `model_spend`) in the same statement. A redo has no tokens.
   */
  get unsavedSpend(): ReadonlyArray<{ message_id: string; usage: TurnUsage }> {
    return this.spent;
  }

  /** Epoch ms of the deadline (from started_at), or null before the start. */
  deadline(): number | null {
    return this.current.startedAt ? this.current.startedAt.getTime() + this.current.limits.timeout_ms : null;
  }

  /** Subagent runs to cancel once this run's change is committed (a cascading cancel, `close_subagent`). */
  get unsavedSubagentCancels(): ReadonlyArray<SubagentCancel> {
    return this.childCancels;
  }
  private childCancels: SubagentCancel[] = [];
  /** Subagent sessions `close_subagent` closed, to mark closed once this run's change is committed. */
  get unsavedSubagentCloses(): readonly string[] {
    return this.childCloses;
  }
  private childCloses: string[] = [];
  /** Subagent runs this run learnt it started (`subagent_run_started`), to look at once this change is committed. */
  get unsavedSubagentStarts(): ReadonlyArray<{ subagent_id: string; run_id: string }> {
    return this.childStarts;
  }
  private childStarts: Array<{ subagent_id: string; run_id: string }> = [];

  /** Ids of steered inputs taken since the last save (the save removes them from the inbox column). */
  get takenInputs(): readonly string[] {
    return this.taken;
  }

  /**
   * Whether this run ended (here, since it was loaded) while a tool call awaited approval: its
   * pending approval rows must be closed with it. (An approval row is pending exactly while the
   * run's call is `awaiting_approval`: both change in one transaction.)
   */
  get endedAwaitingApproval(): boolean {
    return this.endedWithOpenApproval;
  }

  /**
   * Decides what follows `observation` (the rules are the decider's), applies the events and
   * records their public events; returns the effect for the interpreter to perform.
   */
  decide(observation: Observation, env: DecideEnv): Decision {
    const d = decide(this.current, observation, this.ownerAccessRevoked ? { ...env, ownerAccess: false } : env);
    this.apply(d.events, env.now);
    return d;
  }

  /**
   * A point to go back to (`retract`): what the run is and has not saved yet. Cheap: decider states
   * are never changed in place (`evolve` makes a new one), so the state is kept by reference.
   */
  mark(): RunMark {
    return {
      current: this.current,
      events: this.events.length,
      taken: this.taken.length,
      statusChanges: this.statusChanges.length,
      spent: this.spent.length,
      dirty: this.dirty,
      version: this.version_,
      endedWithOpenApproval: this.endedWithOpenApproval,
      saves: this.saves,
    };
  }

  /**
   * Undoes the decisions made since `mark`, none of them committed. For an end that its commit
   * refused (the decider's `take_leftovers`).
   */
  retract(m: RunMark): void {
    if (this.saves !== m.saves) throw new Error('a run cannot retract past a commit');
    this.current = m.current;
    this.events = this.events.slice(0, m.events);
    this.taken = this.taken.slice(0, m.taken);
    this.statusChanges = this.statusChanges.slice(0, m.statusChanges);
    this.spent = this.spent.slice(0, m.spent);
    this.dirty = m.dirty;
    this.version_ = m.version;
    this.endedWithOpenApproval = m.endedWithOpenApproval;
  }

  /**
   * The claim found that the owner of this queued run no longer has a valid key: its start fails
   * `access_revoked` (the decider's rule). Only for the claimed instance (a reload re-checks
   * nothing: the run then starts as usual, as it would have a moment earlier).
   */
  ownerAccessWasRevoked(): void {
    if (this.current.status === 'queued') this.ownerAccessRevoked = true;
  }

  /** A coalesced batch of the streaming message's text (CONTRACT section 8: `message.delta`). */
  streamDelta(messageId: string, delta: string): void {
    this.apply([{ type: 'delta_streamed', message_id: messageId, delta }], Date.now());
  }

  /** Applies decider events (evolve) and records the public events they imply. */
  private apply(events: readonly RunEvent[], now: number): void {
    for (const e of events) {
      const before = this.current;
      const next = evolve(before, e);
      if (e.type === 'finished' && before.state.pending.some((p) => p.status === 'awaiting_approval')) this.endedWithOpenApproval = true;
      if (e.type === 'input_taken') this.taken.push(e.message_id);
      if (e.type === 'subagents_cancel_requested') this.childCancels.push(...e.run_ids.map((run_id) => ({ run_id, reason: e.reason ?? 'parent_cancelled' })));
      if (e.type === 'subagent_closed') this.childCloses.push(e.subagent_id);
      if (e.type === 'subagent_run_started') this.childStarts.push({ subagent_id: e.subagent.id, run_id: e.run_id });
      if (e.type === 'turn_ended' && e.usage.input_tokens + e.usage.output_tokens > 0) this.spent.push({ message_id: e.message_id, usage: e.usage });
      if (next.status !== before.status) this.statusChanges.push(next.status);
      this.current = next;
      this.events.push(...publicEvents(before, e, next));
    }
    if (events.length > 0) {
      this.dirty = true;
      this.version_ = this.loadedVersion + 1;
      this.current.updatedAt = new Date(now);
    }
  }
}

/** See `Run.mark`. */
/** A subagent run this run's commit cancels, and why. */
export interface SubagentCancel {
  run_id: string;
  reason: SubagentCancelReason;
}

export interface RunMark {
  readonly current: RunState;
  readonly events: number;
  readonly taken: number;
  readonly statusChanges: number;
  readonly spent: number;
  readonly dirty: boolean;
  readonly version: number;
  readonly endedWithOpenApproval: boolean;
  readonly saves: number;
}
