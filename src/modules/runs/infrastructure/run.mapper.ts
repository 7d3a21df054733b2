import { emptyLoopState, Run, RunProps, usageOf } from '../domain/run.aggregate';
import { limitsOf } from '../domain/run-state';
import { RunOrmEntity } from './run.orm-entity';

export function runToDomain(r: RunOrmEntity): Run {
  return Run.restore(runRowToProps(r));
}

/** The run as read (its lease is the worker's, not part of it). */
export function runRowToProps(r: RunOrmEntity): RunProps {
  return {
    id: r.id,
    tenantId: r.tenantId,
    subjectId: r.subjectId,
    sessionId: r.sessionId,
    agent: { id: r.agentId, version: r.agentVersion },
    model: r.model,
    status: r.status,
    terminationReason: r.terminationReason,
    error: r.error,
    userMessageId: r.userMessageId,
    finalMessageId: r.finalMessageId,
    stepCount: r.stepCount,
    usage: usageOf(r.usage),
    // Runs stored before cost budgets have none.
    limits: limitsOf(r.limits),
    metadata: r.metadata ?? {},
    state: Object.assign(emptyLoopState(), r.state ?? {}),
    inbox: r.inbox ?? [],
    version: r.version,
    cancelRequestedAt: r.cancelRequestedAt,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
    startedAt: r.startedAt,
    finishedAt: r.finishedAt,
    queueExpiresAt: r.queueExpiresAt,
  };
}

export function runToRow(run: Run): RunOrmEntity {
  // Serialised right away by the repository (JSON columns are stringified): no copy needed.
  const p = run.propsForPersistence();
  const row = new RunOrmEntity();
  Object.assign(row, {
    id: p.id,
    tenantId: p.tenantId,
    subjectId: p.subjectId,
    sessionId: p.sessionId,
    agentId: p.agent.id,
    agentVersion: p.agent.version,
    model: p.model,
    status: p.status,
    terminationReason: p.terminationReason,
    error: p.error,
    userMessageId: p.userMessageId,
    finalMessageId: p.finalMessageId,
    stepCount: p.stepCount,
    usage: p.usage,
    limits: p.limits,
    metadata: p.metadata,
    state: p.state,
    inbox: p.inbox,
    version: run.version,
    // The lease is the worker's (claim and heartbeat, in SQL): a new run has none, a save only clears it.
    leaseOwner: null,
    leaseExpiresAt: null,
    cancelRequestedAt: p.cancelRequestedAt,
    createdAt: p.createdAt,
    updatedAt: p.updatedAt,
    startedAt: p.startedAt,
    finishedAt: p.finishedAt,
    queueExpiresAt: p.queueExpiresAt,
    // Derived from the saved pause: only a waiting run with a time to look at it again is due.
    wakeAt: p.state.pause?.wake_at && p.status.startsWith('waiting_') ? new Date(p.state.pause.wake_at) : null,
  });
  return row;
}
