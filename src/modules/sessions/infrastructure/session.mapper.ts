import { Session } from '../domain/session.aggregate';
import { SessionOrmEntity } from './session.orm-entity';

export function sessionToDomain(row: SessionOrmEntity): Session {
  return Session.restore({
    id: row.id,
    tenantId: row.tenantId,
    subjectId: row.subjectId,
    agent: { id: row.agentId, version: row.agentVersion, model: row.agentModel },
    title: row.title,
    status: row.status,
    revision: row.revision,
    activeRunId: row.activeRunId,
    metadata: row.metadata ?? {},
    defaultConcurrency: row.defaultConcurrency ?? 'steer',
    messageSeq: row.messageSeq,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    lastActiveAt: row.lastActiveAt,
    expiresAt: null, // derived by restore from lastActiveAt + ttl
    ttl: row.ttlSeconds != null ? { seconds: row.ttlSeconds, strategy: row.ttlStrategy ?? 'archive' } : null,
    parent: row.parentSessionId
      ? { sessionId: row.parentSessionId, runId: row.parentRunId ?? '', name: row.subagentName ?? '', status: row.subagentStatus ?? 'active' }
      : null,
  });
}

/** The columns a Session aggregate owns (counters owned by other writers are left out). */
export function sessionToRow(session: Session): Partial<SessionOrmEntity> {
  const s = session.snapshot();
  return {
    id: s.id,
    tenantId: s.tenantId,
    subjectId: s.subjectId,
    agentId: s.agent.id,
    agentVersion: s.agent.version,
    agentModel: s.agent.model,
    title: s.title,
    status: s.status,
    revision: s.revision,
    metadata: s.metadata,
    defaultConcurrency: s.defaultConcurrency,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    lastActiveAt: s.lastActiveAt,
    ttlSeconds: s.ttl?.seconds ?? null,
    ttlStrategy: s.ttl?.strategy ?? null,
    parentSessionId: s.parent?.sessionId ?? null,
    parentRunId: s.parent?.runId ?? null,
    subagentName: s.parent?.name ?? null,
    subagentStatus: s.parent?.status ?? null,
  };
}
