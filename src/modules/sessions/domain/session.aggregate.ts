import { sessionArchived } from './session.errors';
import { DomainError } from '../../../common/errors/domain-error';

export type SessionStatus = 'active' | 'archived';

/** What a run that omits `concurrency` does while the session has an active run (CONTRACT section 7). */
export type RunConcurrency = 'reject' | 'enqueue' | 'steer' | 'interrupt';
export const RUN_CONCURRENCY: readonly RunConcurrency[] = ['reject', 'enqueue', 'steer', 'interrupt'];

/** What happens to a session `seconds` after its last activity (CONTRACT section 17, session TTL). */
export interface SessionTtl {
  seconds: number;
  strategy: 'archive' | 'delete';
}
export const TTL_STRATEGIES: ReadonlyArray<SessionTtl['strategy']> = ['archive', 'delete'];

/** `last_active_at + ttl`, or null without a TTL. */
export function ttlExpiry(lastActiveAt: Date, ttl: SessionTtl | null): Date | null {
  return ttl ? new Date(lastActiveAt.getTime() + ttl.seconds * 1000) : null;
}

/** The agent configuration a session pinned when it was created (CONTRACT section 5). */
export interface AgentSnapshot {
  id: string;
  version: string;
  model: string;
}

export interface SessionProps {
  id: string;
  tenantId: string;
  subjectId: string;
  agent: AgentSnapshot;
  title: string | null;
  status: SessionStatus;
  revision: number;
  activeRunId: string | null;
  metadata: Record<string, string>;
  defaultConcurrency: RunConcurrency;
  messageSeq: number;
  createdAt: Date;
  updatedAt: Date;
  lastActiveAt: Date;
  /** Derived: `lastActiveAt + ttl.seconds` (null without a TTL); activity moves it. */
  expiresAt: Date | null;
  ttl: SessionTtl | null;
  /** Set on a subagent's session (CONTRACT 16): who created it, its name and status. Null: a top-level session. */
  parent?: SubagentParent | null;
}

/** What makes a session a subagent (CONTRACT 16). */
export interface SubagentParent {
  sessionId: string;
  runId: string;
  name: string;
  status: 'active' | 'closed';
}

export type SessionDomainEvent =
  | { type: 'session.created'; sessionId: string }
  | { type: 'session.updated'; sessionId: string; changes: string[] }
  | { type: 'session.archived'; sessionId: string };

/**
 * The Session aggregate: owns title, metadata, the pinned agent configuration, archiving and the
 * revision counter. Every committed change increments `revision` by exactly one; the repository
 * writes it conditionally on the revision it was loaded at.
 */
export class Session {
  private props: SessionProps;
  private readonly loadedRevision: number;
  private events: SessionDomainEvent[] = [];

  private constructor(props: SessionProps, loadedRevision: number) {
    this.props = props;
    this.loadedRevision = loadedRevision;
  }

  static create(input: {
    id: string;
    tenantId: string;
    subjectId: string;
    agent: AgentSnapshot;
    title: string | null;
    metadata: Record<string, string>;
    defaultConcurrency?: RunConcurrency;
    ttl?: SessionTtl | null;
    parent?: SubagentParent | null;
    now: Date;
  }): Session {
    const s = new Session(
      {
        id: input.id,
        tenantId: input.tenantId,
        subjectId: input.subjectId,
        agent: { ...input.agent },
        title: input.title,
        status: 'active',
        revision: 1,
        activeRunId: null,
        metadata: { ...input.metadata },
        defaultConcurrency: input.defaultConcurrency ?? 'steer',
        messageSeq: 0,
        createdAt: input.now,
        updatedAt: input.now,
        lastActiveAt: input.now,
        expiresAt: ttlExpiry(input.now, input.ttl ?? null),
        ttl: input.ttl ? { ...input.ttl } : null,
        parent: input.parent ? { ...input.parent } : null,
      },
      0,
    );
    s.events.push({ type: 'session.created', sessionId: input.id });
    return s;
  }

  static restore(props: SessionProps): Session {
    return new Session(
      { ...props, agent: { ...props.agent }, metadata: { ...props.metadata }, ttl: props.ttl ? { ...props.ttl } : null, parent: props.parent ? { ...props.parent } : null, expiresAt: ttlExpiry(props.lastActiveAt, props.ttl) },
      props.revision,
    );
  }

  get id(): string {
    return this.props.id;
  }
  get tenantId(): string {
    return this.props.tenantId;
  }
  get subjectId(): string {
    return this.props.subjectId;
  }
  get revision(): number {
    return this.props.revision;
  }
  /** The revision the aggregate had when it was loaded: the condition of the next write. */
  get expectedRevision(): number {
    return this.loadedRevision;
  }
  get status(): SessionStatus {
    return this.props.status;
  }
  get isNew(): boolean {
    return this.loadedRevision === 0;
  }
  get isDirty(): boolean {
    return this.props.revision !== this.loadedRevision;
  }
  snapshot(): Readonly<SessionProps> {
    return { ...this.props, agent: { ...this.props.agent }, metadata: { ...this.props.metadata }, ttl: this.props.ttl ? { ...this.props.ttl } : null, parent: this.props.parent ? { ...this.props.parent } : null };
  }
  pullEvents(): SessionDomainEvent[] {
    const out = this.events;
    this.events = [];
    return out;
  }

  /** Rejects a write whose caller expected another revision. */
  assertRevision(expected: number | undefined): void {
    if (expected !== undefined && expected !== this.props.revision) {
      throw new DomainError('session_conflict', `the session is at revision ${this.props.revision}, not ${expected}`, {
        session_id: this.props.id,
        current_revision: this.props.revision,
        expected_revision: expected,
      });
    }
  }

  /** Title, metadata and model edits. A no-op edit changes nothing and keeps the revision. */
  update(
    changes: { title?: string | null; metadata?: Record<string, string>; model?: string; defaultConcurrency?: RunConcurrency; ttl?: SessionTtl | null },
    now: Date,
  ): void {
    const changed: string[] = [];
    if (changes.title !== undefined && changes.title !== this.props.title) {
      this.props.title = changes.title;
      changed.push('title');
    }
    if (changes.metadata !== undefined && JSON.stringify(changes.metadata) !== JSON.stringify(this.props.metadata)) {
      this.props.metadata = { ...changes.metadata };
      changed.push('metadata');
    }
    if (changes.model !== undefined && changes.model !== this.props.agent.model) {
      this.props.agent = { ...this.props.agent, model: changes.model };
      changed.push('agent.model');
    }
    if (changes.defaultConcurrency !== undefined && changes.defaultConcurrency !== this.props.defaultConcurrency) {
      this.props.defaultConcurrency = changes.defaultConcurrency;
      changed.push('default_concurrency');
    }
    if (changes.ttl !== undefined && JSON.stringify(changes.ttl) !== JSON.stringify(this.props.ttl)) {
      this.props.ttl = changes.ttl ? { ...changes.ttl } : null;
      this.props.expiresAt = ttlExpiry(this.props.lastActiveAt, this.props.ttl);
      changed.push('ttl');
    }
    if (changed.length === 0) return;
    this.bump(now);
    this.events.push({ type: 'session.updated', sessionId: this.props.id, changes: changed });
  }

  /** Archiving keeps history and blocks new runs. Archiving an archived session changes nothing. */
  archive(now: Date): void {
    if (this.props.status === 'archived') return;
    this.props.status = 'archived';
    this.bump(now);
    this.events.push({ type: 'session.archived', sessionId: this.props.id });
  }

  /** New runs need an active session. */
  assertAcceptsRuns(): void {
    if (this.props.status === 'archived') {
      throw sessionArchived(this.props.id);
    }
  }

  private bump(now: Date): void {
    // One committed change = one revision, however many edits the command made.
    this.props.revision = this.loadedRevision + 1;
    this.props.updatedAt = now;
  }
}
