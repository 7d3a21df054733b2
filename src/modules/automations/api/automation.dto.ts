import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsBoolean, IsDateString, IsIn, IsObject, IsString, Matches, MaxLength, MinLength, ValidateIf, ValidateNested } from 'class-validator';
import { IsStringMap } from '../../../common/http/string-map.validator';
import { MayOmit } from '../../../common/http/validation';
import { RunInputDto } from '../../runs/api/dto/create-run.request.dto';
import type { AutomationSchedule, AutomationTarget } from '../domain/automation';

export class AutomationScheduleDto {
  @ApiProperty({ enum: ['cron', 'once'], example: 'cron' })
  @IsIn(['cron', 'once'])
  type!: 'cron' | 'once';

  @ApiPropertyOptional({ example: '0 9 * * 1-5', description: 'With type cron: a standard five-field cron expression (minute hour day-of-month month day-of-week).' })
  @ValidateIf((o: AutomationScheduleDto, v: unknown) => o.type === 'cron' || v !== undefined)
  @IsString()
  @MaxLength(200)
  expression?: string;

  @ApiPropertyOptional({
    example: 'Europe/Berlin',
    description:
      'With type cron: the IANA time zone the expression is read in. Daylight saving time as the cron library (croner) documents it: a local time that ' +
      'does not exist that day (spring forward) fires at the first minute after the gap; one that occurs twice (fall back) fires once, at the first occurrence.',
  })
  @ValidateIf((o: AutomationScheduleDto, v: unknown) => o.type === 'cron' || v !== undefined)
  @IsString()
  @MaxLength(64)
  timezone?: string;

  @ApiPropertyOptional({ example: '2026-12-24T09:00:00.000Z', description: 'With type once: the future time (RFC 3339) it fires at.' })
  @ValidateIf((o: AutomationScheduleDto, v: unknown) => o.type === 'once' || v !== undefined)
  @IsDateString({ strict: true })
  at?: string;
}

export class AutomationTargetDto {
  @ApiProperty({ enum: ['new_session', 'session'], example: 'new_session', description: '`new_session`: each invocation creates a session of `agent_id`; `session`: the input goes to `session_id` (by its `default_concurrency` when busy).' })
  @IsIn(['new_session', 'session'])
  type!: 'new_session' | 'session';

  @ApiPropertyOptional({ example: 'support_agent', description: 'With new_session.' })
  @ValidateIf((o: AutomationTargetDto, v: unknown) => o.type === 'new_session' || v !== undefined)
  @IsString()
  @Matches(/^[a-z0-9_-]{1,64}$/, { message: 'agent_id must be an agent id such as support_agent' })
  agent_id?: string;

  @ApiPropertyOptional({ example: 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B', description: 'With session: one of your sessions.' })
  @ValidateIf((o: AutomationTargetDto, v: unknown) => o.type === 'session' || v !== undefined)
  @IsString()
  @MaxLength(64)
  session_id?: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string' }, description: 'With new_session: metadata of each new session.' })
  @MayOmit()
  @IsStringMap(16, 512)
  metadata?: Record<string, string>;
}

export class CreateAutomationRequestDto {
  @ApiProperty({ example: 'Morning digest', maxLength: 200 })
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  name!: string;

  @ApiProperty({ type: AutomationScheduleDto })
  @IsObject()
  @ValidateNested()
  @Type(() => AutomationScheduleDto)
  schedule!: AutomationScheduleDto;

  @ApiProperty({ type: AutomationTargetDto })
  @IsObject()
  @ValidateNested()
  @Type(() => AutomationTargetDto)
  target!: AutomationTargetDto;

  @ApiProperty({ type: RunInputDto, example: { role: 'user', content: [{ type: 'text', text: 'Summarise the open tickets.' }] } })
  @IsObject()
  @ValidateNested()
  @Type(() => RunInputDto)
  input!: RunInputDto;

  @ApiPropertyOptional({ default: true, description: 'false: created paused.' })
  @MayOmit()
  @IsBoolean()
  enabled?: boolean;

  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string' }, example: { team: 'support' } })
  @MayOmit()
  @IsStringMap(16, 512)
  metadata?: Record<string, string>;
}

export class UpdateAutomationRequestDto {
  @ApiPropertyOptional({ maxLength: 200 })
  @MayOmit()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  name?: string;

  @ApiPropertyOptional({ type: AutomationScheduleDto, description: 'Replaces the schedule (same type); the next slot is computed from now.' })
  @MayOmit()
  @IsObject()
  @ValidateNested()
  @Type(() => AutomationScheduleDto)
  schedule?: AutomationScheduleDto;

  @ApiPropertyOptional({ type: AutomationTargetDto, description: 'Replaces the target (same type).' })
  @MayOmit()
  @IsObject()
  @ValidateNested()
  @Type(() => AutomationTargetDto)
  target?: AutomationTargetDto;

  @ApiPropertyOptional({ type: RunInputDto })
  @MayOmit()
  @IsObject()
  @ValidateNested()
  @Type(() => RunInputDto)
  input?: RunInputDto;

  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string' } })
  @MayOmit()
  @IsStringMap(16, 512)
  metadata?: Record<string, string>;
}

export const UPDATE_AUTOMATION_FIELDS = ['name', 'schedule', 'target', 'input', 'metadata'] as const;

export function toSchedule(dto: AutomationScheduleDto): AutomationSchedule {
  return dto.type === 'once' ? { type: 'once', at: new Date(dto.at!) } : { type: 'cron', expression: dto.expression!, timezone: dto.timezone! };
}

export function toTarget(dto: AutomationTargetDto): AutomationTarget {
  return dto.type === 'session' ? { type: 'session', sessionId: dto.session_id! } : { type: 'new_session', agentId: dto.agent_id!, metadata: dto.metadata ?? {} };
}

// ---- responses (Swagger) -------------------------------------------------------------------

export class AutomationInvocationResponseDto {
  @ApiProperty({ example: 'ainv_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) id!: string;
  @ApiProperty({ enum: ['automation.invocation'] }) object!: 'automation.invocation';
  @ApiProperty({ example: 'auto_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) automation_id!: string;
  @ApiProperty({ enum: ['schedule', 'manual'], description: '`manual`: run now (POST .../invocations).' }) source!: 'schedule' | 'manual';
  @ApiProperty({ type: String, nullable: true, description: 'The scheduled slot; null for a manual run.' }) scheduled_for!: string | null;
  @ApiProperty({
    enum: ['queued', 'started', 'skipped', 'failed'],
    description: '`queued`: recorded, not delivered yet (a manual run answers with it); `started`: its run was created (the run\'s own status says how it went); `skipped`: see skip_reason; `failed`: the input was refused (error).',
  })
  status!: 'queued' | 'started' | 'skipped' | 'failed';
  @ApiProperty({ type: String, nullable: true, enum: ['missed', null], description: '`missed`: the slot was older than AUTOMATION_CATCHUP_MS when a node first saw it (every node was down).' })
  skip_reason!: string | null;
  @ApiProperty({ type: 'object', nullable: true, properties: { code: { type: 'string' }, message: { type: 'string' } }, description: 'For failed: the refusal\'s error code (session_archived, session_busy, agent_not_found, quota_exceeded, ...).' })
  error!: { code: string; message: string } | null;
  @ApiProperty({ type: String, nullable: true }) run_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) session_id!: string | null;
  @ApiProperty() created_at!: string;
  @ApiProperty() updated_at!: string;
}

export class AutomationResponseDto {
  @ApiProperty({ example: 'auto_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) id!: string;
  @ApiProperty({ enum: ['automation'] }) object!: 'automation';
  @ApiProperty() tenant_id!: string;
  @ApiProperty() subject_id!: string;
  @ApiProperty() name!: string;
  @ApiProperty({ type: AutomationScheduleDto }) schedule!: AutomationScheduleDto;
  @ApiProperty({ type: AutomationTargetDto }) target!: AutomationTargetDto;
  @ApiProperty({ type: RunInputDto }) input!: RunInputDto;
  @ApiProperty({ description: 'status is active.' }) enabled!: boolean;
  @ApiProperty({ enum: ['active', 'paused', 'completed'], description: '`completed`: a one-time automation that has fired.' }) status!: 'active' | 'paused' | 'completed';
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' } }) metadata!: Record<string, string>;
  @ApiProperty({
    type: 'object',
    properties: { type: { type: 'string', enum: ['developer', 'agent'] }, session_id: { type: 'string' }, tool_call_id: { type: 'string' } },
    description: '`developer` (created through the API) or `agent` (by the built-in tool schedule_follow_up, with the session and tool call).',
  })
  created_by!: { type: 'developer' } | { type: 'agent'; session_id: string; tool_call_id: string };
  @ApiProperty({ type: String, nullable: true, description: 'The next slot; null while paused or once completed.' }) next_run_at!: string | null;
  @ApiProperty({ type: AutomationInvocationResponseDto, nullable: true }) last_invocation!: AutomationInvocationResponseDto | null;
  @ApiProperty({ description: 'Increments on every change, the scheduler\'s progress included.' }) revision!: number;
  @ApiProperty() created_at!: string;
  @ApiProperty() updated_at!: string;
}

export class AutomationListResponseDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [AutomationResponseDto] }) data!: AutomationResponseDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}

export class AutomationInvocationListResponseDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [AutomationInvocationResponseDto] }) data!: AutomationInvocationResponseDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}
