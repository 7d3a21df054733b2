/** Event types of CONTRACT section 8. */
export const RUN_EVENT_TYPES = [
  'run.started',
  'run.waiting',
  'run.resumed',
  'run.cancel_requested',
  'run.input',
  'run.input_requested',
  'agent.handoff',
  'subagent.created',
  'subagent.completed',
  'subagent.closed',
  'message.started',
  'message.delta',
  'message.completed',
  'tool.requested',
  'tool.started',
  'tool.completed',
  'tool.failed',
  'approval.requested',
  'approval.accepted',
  'approval.rejected',
  'usage',
  'run.finished',
] as const;

export type RunEventType = (typeof RUN_EVENT_TYPES)[number];

/** An event as the writer hands it to the store (sequences are assigned by the store). */
export interface NewRunEvent {
  type: RunEventType;
  data: Record<string, unknown>;
}

/** An event as stored: full, unredacted data. */
export interface StoredRunEvent {
  id: string; // evt_...
  tenantId: string;
  subjectId: string; // owner of the session
  sessionId: string;
  runId: string;
  sequence: number; // per run, from 1, gap-free
  sessionSequence: number; // per session, from 1, gap-free
  type: RunEventType;
  occurredAt: Date;
  data: Record<string, unknown>;
}

/** The public envelope (SSE `data:` and JSON pages). */
export interface PublicRunEvent {
  event_id: string;
  run_id: string;
  session_id: string;
  sequence: number;
  session_sequence: number;
  type: RunEventType;
  occurred_at: string;
  data: Record<string, unknown>;
}

export type Audience = 'admin' | 'member';

export interface EventStreamOwner {
  tenantId: string;
  subjectId: string;
  sessionId: string;
  runId: string;
}

/**
 * Port: the event store. `append` runs inside the caller's transaction (UnitOfWork.manager):
 * it locks the session's and then the run's counter rows, assigns `session_sequence` and
 * `sequence` (gap-free, commit-ordered), inserts the rows and arranges the after-commit
 * notification. Reads are bounded pages.
 */
export abstract class EventStore {
  abstract append(owner: EventStreamOwner, events: NewRunEvent[]): Promise<StoredRunEvent[]>;
  abstract readRun(runId: string, afterSequence: number, limit: number): Promise<StoredRunEvent[]>;
  abstract readSession(sessionId: string, afterSessionSequence: number, limit: number): Promise<StoredRunEvent[]>;
  /** The last assigned sequence of a run (0 when none). */
  abstract lastSequence(runId: string): Promise<number>;
  /** The last sequences of several runs (a list page) in one read; 0 for runs without events. */
  async lastSequences(runIds: string[]): Promise<Map<string, number>> {
    return new Map(await Promise.all(runIds.map(async (id) => [id, await this.lastSequence(id)] as const)));
  }
}
