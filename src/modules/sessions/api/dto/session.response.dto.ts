import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { iso } from '../../../../common/http/pagination';
import { RUN_CONCURRENCY, RunConcurrency, SessionProps } from '../../domain/session.aggregate';
import { WORK_STATUSES, WorkStatus } from '../../domain/work-status';
import { SessionTtlResponseDto } from './session-ttl.dto';

export class AgentSnapshotDto {
  @ApiProperty({ example: 'support_agent' }) id!: string;
  @ApiProperty({ example: '1' }) version!: string;
  @ApiProperty({ example: 'scripted' }) model!: string;
}

export class SubagentInfoDto {
  @ApiProperty({ example: 'researcher_1', description: 'The name `create_subagent` gave it.' }) name!: string;
  @ApiProperty({ enum: ['active', 'closed'], description: '`closed`: `close_subagent` closed it (it takes no more input).' }) status!: 'active' | 'closed';
}

export class SessionResponseDto {
  @ApiProperty({ example: 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) id!: string;
  @ApiProperty({ enum: ['session'] }) object!: 'session';
  @ApiProperty({ example: 'tenant_dev' }) tenant_id!: string;
  @ApiProperty({ example: 'user_dev' }) subject_id!: string;
  @ApiProperty({ example: 'support_agent' }) agent_id!: string;
  @ApiProperty({ type: AgentSnapshotDto, description: 'Agent configuration pinned at creation; `model` may be changed later.' })
  agent!: AgentSnapshotDto;
  @ApiProperty({ type: String, nullable: true, example: 'Order O-1001' }) title!: string | null;
  @ApiProperty({ enum: ['active', 'archived'] }) status!: 'active' | 'archived';
  @ApiProperty({ example: 1, description: 'Increments by exactly 1 on every committed change (update, archive, each appended message).' })
  revision!: number;
  @ApiProperty({ type: String, nullable: true, example: null }) active_run_id!: string | null;
  @ApiProperty({
    enum: WORK_STATUSES,
    example: 'idle',
    description:
      'What the session is doing: `idle` (no run yet, or the last one completed), `running` (its active run is queued, running or cancelling), `waiting` (its active run waits: approval, client tool, ...), or the last run\'s terminal status `failed` / `cancelled` / `terminated` / `expired` until the next run starts.',
  })
  work_status!: WorkStatus;
  @ApiProperty({
    enum: RUN_CONCURRENCY,
    example: 'steer',
    description: 'What a run that omits `concurrency` does while the session has an active run (set on create or update; default `steer` for sessions created from this version on, earlier ones keep theirs): reject (409 session_busy), enqueue (FIFO), steer (the input goes to the active run; what it did not take goes, in commit order, into one follow-up run) or interrupt (the active run is cancelled, then this one runs).',
  })
  default_concurrency!: RunConcurrency;
  @ApiProperty({ example: '2026-11-30T09:00:00.000Z' }) created_at!: string;
  @ApiProperty({ example: '2026-11-30T09:00:00.000Z' }) updated_at!: string;
  @ApiProperty({ example: '2026-11-30T09:00:00.000Z' }) last_active_at!: string;
  @ApiProperty({ type: String, nullable: true, example: null, description: '`last_active_at` + `ttl.seconds` (null without a TTL): past it, with no active run, the session is archived or deleted (`ttl.strategy`).' })
  expires_at!: string | null;
  @ApiProperty({ type: SessionTtlResponseDto, nullable: true, description: 'The session TTL (CONTRACT section 17), null: never expires.' })
  ttl!: SessionTtlResponseDto | null;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' }, example: { customer: 'acme' } })
  metadata!: Record<string, string>;
  @ApiPropertyOptional({ type: String, example: 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3A', description: 'Only on a subagent (CONTRACT 16): the session whose run created it.' })
  parent_session_id?: string;
  @ApiPropertyOptional({ type: String, example: 'run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3A', description: 'Only on a subagent: the run that created it.' }) parent_run_id?: string;
  @ApiPropertyOptional({ type: SubagentInfoDto, description: 'Only on a subagent: its name and status.' }) subagent?: SubagentInfoDto;
}

/** `workStatus`: from SessionWorkStatusQuery (a new session is idle). */
export function toSessionResponse(s: Readonly<SessionProps>, workStatus: WorkStatus = 'idle'): SessionResponseDto {
  return {
    id: s.id,
    object: 'session',
    tenant_id: s.tenantId,
    subject_id: s.subjectId,
    agent_id: s.agent.id,
    agent: { id: s.agent.id, version: s.agent.version, model: s.agent.model },
    title: s.title,
    status: s.status,
    revision: s.revision,
    active_run_id: s.activeRunId,
    work_status: workStatus,
    default_concurrency: s.defaultConcurrency,
    created_at: iso(s.createdAt)!,
    updated_at: iso(s.updatedAt)!,
    last_active_at: iso(s.lastActiveAt)!,
    expires_at: iso(s.expiresAt),
    ttl: s.ttl ? { seconds: s.ttl.seconds, strategy: s.ttl.strategy } : null,
    metadata: s.metadata,
    ...(s.parent ? { parent_session_id: s.parent.sessionId, parent_run_id: s.parent.runId, subagent: { name: s.parent.name, status: s.parent.status } } : {}),
  };
}

export class SessionListResponseDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [SessionResponseDto] }) data!: SessionResponseDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}

