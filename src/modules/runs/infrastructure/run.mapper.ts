import { emptyRunState, Run, RunProps } from '../domain/run.aggregate';
import { RunOrmEntity } from './run.orm-entity';

export function runToDomain(r: RunOrmEntity): Run {
  return Run.restore(runRowToProps(r));
}

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
    usage: r.usage,
    limits: r.limits,
    metadata: r.metadata ?? {},
    state: Object.assign(emptyRunState(), r.state ?? {}),
    inbox: r.inbox ?? [],
    version: r.version,
    leaseOwner: r.leaseOwner,
    leaseExpiresAt: r.leaseExpiresAt,
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
    version: p.version,
    leaseOwner: p.leaseOwner,
    leaseExpiresAt: p.leaseExpiresAt,
    cancelRequestedAt: p.cancelRequestedAt,
    createdAt: p.createdAt,
    updatedAt: p.updatedAt,
    startedAt: p.startedAt,
    finishedAt: p.finishedAt,
    queueExpiresAt: p.queueExpiresAt,
  });
  return row;
}
