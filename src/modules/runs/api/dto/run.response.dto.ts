import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { iso } from '../../../../common/http/pagination';
import { RunProps } from '../../domain/run.aggregate';
import { RUN_STATUSES, RunStatus } from '../../domain/run-status';

export class RunUsageDto {
  @ApiProperty({ example: 42 }) input_tokens!: number;
  @ApiProperty({ example: 17 }) output_tokens!: number;
  @ApiProperty({ example: 0 }) cached_input_tokens!: number;
  @ApiProperty({ example: 1 }) tool_calls!: number;
  @ApiProperty({ example: 2 }) model_calls!: number;
}

export class RunLimitsDto {
  @ApiProperty({ example: 10, minimum: 1, maximum: 100 }) max_steps!: number;
  @ApiProperty({ example: 300000, minimum: 1000, maximum: 3600000 }) timeout_ms!: number;
  @ApiProperty({ type: Number, nullable: true, example: null }) max_total_tokens!: number | null;
  @ApiProperty({ example: 50 }) max_tool_calls!: number;
}

export class RunErrorDto {
  @ApiProperty({ example: 'model_timeout' }) code!: string;
  @ApiProperty({ example: 'the model did not answer in time' }) message!: string;
}

export class PendingApprovalDto {
  @ApiProperty({ example: 'apr_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) approval_id!: string;
  @ApiProperty({ example: 'call_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) tool_call_id!: string;
  @ApiProperty({ example: 'create_ticket' }) tool_name!: string;
}

export class PendingToolCallDto {
  @ApiProperty({ example: 'call_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) tool_call_id!: string;
  @ApiProperty({ example: 'lookup_customer' }) tool_name!: string;
  @ApiProperty({ type: 'object', additionalProperties: true, example: { email: 'ada@example.com' } }) arguments!: unknown;
}

export class RunAgentDto {
  @ApiProperty({ example: 'support_agent' }) id!: string;
  @ApiProperty({ example: '1' }) version!: string;
}

export class RunResponseDto {
  @ApiProperty({ example: 'run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) id!: string;
  @ApiProperty({ enum: ['run'] }) object!: 'run';
  @ApiProperty({ example: 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) session_id!: string;
  @ApiProperty({ type: RunAgentDto }) agent!: RunAgentDto;
  @ApiProperty({ example: 'scripted' }) model!: string;
  @ApiProperty({
    enum: ['queued', 'running', 'waiting_for_approval', 'waiting_for_tool', 'cancelling', 'completed', 'failed', 'cancelled', 'expired', 'terminated'],
  })
  status!: string;
  @ApiProperty({ example: 'msg_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) user_message_id!: string;
  @ApiProperty({ type: String, nullable: true }) final_message_id!: string | null;
  @ApiProperty({ type: String, nullable: true, enum: ['max_steps', 'deadline', 'token_budget', 'tool_budget', 'loop_detected', null] })
  termination_reason!: string | null;
  @ApiProperty({ type: RunErrorDto, nullable: true }) error!: RunErrorDto | null;
  @ApiProperty({ example: 1 }) step_count!: number;
  @ApiProperty({ type: RunUsageDto }) usage!: RunUsageDto;
  @ApiProperty({ type: RunLimitsDto }) limits!: RunLimitsDto;
  @ApiProperty({ type: [PendingApprovalDto] }) pending_approvals!: PendingApprovalDto[];
  @ApiProperty({ type: [PendingToolCallDto] }) pending_tool_calls!: PendingToolCallDto[];
  @ApiProperty({ example: 7, description: 'Sequence of the newest event of this run: resume its stream after it.' }) last_sequence!: number;
  @ApiProperty({ example: '2026-11-30T09:00:00.000Z' }) created_at!: string;
  @ApiProperty({ type: String, nullable: true }) started_at!: string | null;
  @ApiProperty({ type: String, nullable: true }) finished_at!: string | null;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' }, example: { channel: 'swagger' } }) metadata!: Record<string, string>;
  @ApiPropertyOptional({ description: 'Sync mode only: the text of the final assistant message.' }) output_text?: string | null;
}

export function toRunResponse(
  r: Readonly<RunProps>,
  lastSequence: number,
  redactArgs: (toolName: string, args: unknown) => unknown = (_n, a) => a,
): RunResponseDto {
  const pending = r.state.pending ?? [];
  return {
    id: r.id,
    object: 'run',
    session_id: r.sessionId,
    agent: { id: r.agent.id, version: r.agent.version },
    model: r.model,
    status: r.status,
    user_message_id: r.userMessageId,
    final_message_id: r.finalMessageId,
    termination_reason: r.terminationReason,
    error: r.error,
    step_count: r.stepCount,
    usage: {
      input_tokens: r.usage.input_tokens,
      output_tokens: r.usage.output_tokens,
      cached_input_tokens: r.usage.cached_input_tokens,
      tool_calls: r.usage.tool_calls,
      model_calls: r.usage.model_calls,
    },
    limits: { ...r.limits },
    pending_approvals: pending
      .filter((p) => p.status === 'awaiting_approval' && p.approval_id)
      .map((p) => ({ approval_id: p.approval_id!, tool_call_id: p.tool_call_id, tool_name: p.tool_name })),
    pending_tool_calls: pending
      .filter((p) => p.status === 'awaiting_client')
      .map((p) => ({ tool_call_id: p.tool_call_id, tool_name: p.tool_name, arguments: redactArgs(p.tool_name, p.arguments) })),
    last_sequence: lastSequence,
    created_at: iso(r.createdAt)!,
    started_at: iso(r.startedAt),
    finished_at: iso(r.finishedAt),
    metadata: r.metadata,
  };
}

export class RunStreamDto {
  @ApiProperty({ enum: ['sse'] }) protocol!: 'sse';
  @ApiProperty({ example: '/v1/runs/run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B/events' }) url!: string;
  @ApiProperty({ type: Number, nullable: true, example: null }) cursor!: number | null;
}

export class RunReceiptDto {
  @ApiProperty({ example: 'run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) run_id!: string;
  @ApiProperty({ example: 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) session_id!: string;
  @ApiProperty({ example: 'msg_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) user_message_id!: string;
  @ApiProperty({
    enum: RUN_STATUSES,
    example: 'queued',
    description: 'A new run is `queued`. A steered input (`steered: true`) names the active run that takes it, with that run\'s current status.',
  })
  status!: RunStatus;
  @ApiPropertyOptional({
    enum: [true],
    description: 'Present (true) when the input was steered to the active run (`concurrency: "steer"`): `run_id` is that run, which takes the input into its next model turn (`run.input` on its stream).',
  })
  steered?: true;
  @ApiProperty({ type: RunStreamDto }) stream!: RunStreamDto;
}

export class RunListResponseDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [RunResponseDto] }) data!: RunResponseDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}
