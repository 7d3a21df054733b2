import { INPUT_DISPOSITIONS, InputDisposition, InputReceipt } from '../../domain/input-receipt';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { iso } from '../../../../common/http/pagination';
import { RunProps } from '../../domain/run.aggregate';
import { isWaiting, RUN_STATUSES, RunStatus } from '../../domain/run-status';
import { currentAgentOf, limitsOf } from '../../domain/run-state';

export class EstimatedCostDto {
  @ApiProperty({ example: '0.001234', pattern: '^\\d+(\\.\\d+)?$', description: 'USD as a decimal string (exact, never a binary float).' }) amount!: string;
  @ApiProperty({ enum: ['USD'], example: 'USD' }) currency!: 'USD';
}

export class RunUsageDto {
  @ApiProperty({ example: 42 }) input_tokens!: number;
  @ApiProperty({ example: 17 }) output_tokens!: number;
  @ApiProperty({ example: 0, description: 'Input tokens the provider served from its cache (part of input_tokens).' }) cached_input_tokens!: number;
  @ApiProperty({ example: 0, description: 'Output tokens spent reasoning (part of output_tokens).' }) reasoning_tokens!: number;
  @ApiProperty({
    type: EstimatedCostDto,
    description: "From the model's price (GET /v1/models): uncached input, cached input and output (reasoning included) at their prices. Failed and cancelled runs count what they used.",
  })
  estimated_cost!: EstimatedCostDto;
  @ApiProperty({ example: 1 }) tool_calls!: number;
  @ApiProperty({ example: 2 }) model_calls!: number;
}

export class RunLimitsDto {
  @ApiProperty({ example: 10, minimum: 1, maximum: 100 }) max_steps!: number;
  @ApiProperty({ example: 300000, minimum: 1000, maximum: 3600000 }) timeout_ms!: number;
  @ApiProperty({ type: Number, nullable: true, example: null }) max_total_tokens!: number | null;
  @ApiProperty({ example: 50 }) max_tool_calls!: number;
  @ApiProperty({ type: String, nullable: true, example: '0.5', description: 'Cost budget in USD (decimal string); null: none. A run that would pass it is terminated with cost_budget.' })
  max_cost!: string | null;
  @ApiProperty({ example: 3, minimum: 0, maximum: 10, description: 'Levels of subagents that may be below this run (a subagent run has one less than its parent).' })
  max_subagent_depth!: number;
  @ApiProperty({ example: 20, minimum: 0, maximum: 1000, description: "Subagent runs this run's whole tree may start." })
  max_subagents_per_run!: number;
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

export class RunPauseDto {
  @ApiProperty({
    enum: ['approval', 'client_tool', 'input', 'callback', 'timer', 'quota'],
    example: 'input',
    description:
      'What the run waits for: `approval` (a tool call awaits a decision), `client_tool` (POST .../tool_outputs), `input` (`ask_user`: the next user input to the session answers it), ' +
      '`callback` (an http tool answers by POST /v1/runs/{id}/callbacks/{tool_call_id}), `timer` (`wait`/`wait_until`), `quota` (the tenant\'s spend limit; the run continues when it allows).',
  })
  reason!: string;
  @ApiProperty({ example: '2026-11-30T09:00:00.000Z', description: 'When the run began to wait.' }) since!: string;
  @ApiPropertyOptional({
    type: String,
    example: '2026-12-01T09:00:00.000Z',
    description: 'When the wait ends by itself: the timer rings (at most the deadline), an unanswered input expires the run (INPUT_TTL_MS), a callback times out (the tool\'s callback_timeout_ms), the quota window rolls over.',
  })
  until?: string;
  @ApiProperty({ type: 'object', additionalProperties: true, example: { question: 'Which order do you mean?', tool_call_id: 'call_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' } })
  details!: Record<string, unknown>;
}

export class RunAgentDto {
  @ApiProperty({ example: 'support_agent' }) id!: string;
  @ApiProperty({ example: '1' }) version!: string;
}

export class RunResponseDto {
  @ApiProperty({ example: 'run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) id!: string;
  @ApiProperty({ enum: ['run'] }) object!: 'run';
  @ApiProperty({ example: 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) session_id!: string;
  @ApiProperty({ type: RunAgentDto, description: 'The agent the run was created with (the session\'s pinned agent).' }) agent!: RunAgentDto;
  @ApiProperty({
    type: RunAgentDto,
    description: 'The agent in control (CONTRACT 16): `agent` until a handoff, then its target; a run starts with the agent that had control of its session last.',
  })
  current_agent!: RunAgentDto;
  @ApiPropertyOptional({
    type: String,
    example: 'run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3A',
    description: "Only on a subagent's run (CONTRACT 16): the parent run that started it (also in webhooks' `data.object`).",
  })
  parent_run_id?: string;
  @ApiProperty({ example: 'scripted', description: "The model of the agent in control (after a handoff: the target's pinned model)." }) model!: string;
  @ApiProperty({ enum: RUN_STATUSES })
  status!: string;
  @ApiProperty({ example: 'msg_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) user_message_id!: string;
  @ApiProperty({ type: String, nullable: true }) final_message_id!: string | null;
  @ApiProperty({ type: String, nullable: true, enum: ['max_steps', 'deadline', 'token_budget', 'tool_budget', 'cost_budget', 'loop_detected', null] })
  termination_reason!: string | null;
  @ApiProperty({ type: RunErrorDto, nullable: true }) error!: RunErrorDto | null;
  @ApiProperty({ example: 1 }) step_count!: number;
  @ApiProperty({ type: RunUsageDto }) usage!: RunUsageDto;
  @ApiProperty({ type: RunLimitsDto }) limits!: RunLimitsDto;
  @ApiProperty({ type: [PendingApprovalDto] }) pending_approvals!: PendingApprovalDto[];
  @ApiProperty({ type: [PendingToolCallDto] }) pending_tool_calls!: PendingToolCallDto[];
  @ApiPropertyOptional({ type: RunPauseDto, description: 'Present while the run waits (a `waiting_for_*` status): why, since when and until when (CONTRACT 17).' })
  pause?: RunPauseDto;
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
    current_agent: { ...currentAgentOf(r) },
    ...(r.state.parent ? { parent_run_id: r.state.parent.run_id } : {}),
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
      reasoning_tokens: r.usage.reasoning_tokens,
      estimated_cost: { amount: r.usage.estimated_cost.amount, currency: r.usage.estimated_cost.currency },
      tool_calls: r.usage.tool_calls,
      model_calls: r.usage.model_calls,
    },
    limits: { ...limitsOf(r.limits) },
    pending_approvals: pending
      .filter((p) => p.status === 'awaiting_approval' && p.approval_id)
      .map((p) => ({ approval_id: p.approval_id!, tool_call_id: p.tool_call_id, tool_name: p.tool_name })),
    pending_tool_calls: pending
      .filter((p) => p.status === 'awaiting_client')
      .map((p) => ({ tool_call_id: p.tool_call_id, tool_name: p.tool_name, arguments: redactArgs(p.tool_name, p.arguments) })),
    ...(pauseOf(r) ? { pause: pauseOf(r)! } : {}),
    last_sequence: lastSequence,
    created_at: iso(r.createdAt)!,
    started_at: iso(r.startedAt),
    finished_at: iso(r.finishedAt),
    metadata: r.metadata,
  };
}

/** The Run's `pause` while it waits: its saved pause, or (approval, client tool) what its pending calls await. */
function pauseOf(r: Readonly<RunProps>): RunPauseDto | null {
  if (!isWaiting(r.status)) return null;
  const p = r.state.pause;
  if (p) {
    const details: Record<string, unknown> = { ...p.details };
    delete details.requested_until_ms;
    if (p.tool_call_id) details.tool_call_id = p.tool_call_id;
    return { reason: p.reason, since: p.since, ...(p.until ? { until: p.until } : {}), details };
  }
  const awaiting = (r.state.pending ?? []).filter((c) => c.status === 'awaiting_approval' || c.status === 'awaiting_client');
  const reason = r.status === 'waiting_for_approval' ? 'approval' : 'client_tool';
  return { reason, since: iso(r.updatedAt)!, details: { tool_call_ids: awaiting.map((c) => c.tool_call_id) } };
}

export class RunStreamDto {
  @ApiProperty({ enum: ['sse'] }) protocol!: 'sse';
  @ApiProperty({ example: '/v1/runs/run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B/events' }) url!: string;
  @ApiProperty({ type: Number, nullable: true, example: null }) cursor!: number | null;
}

export class InputReceiptDto {
  @ApiProperty({ example: 'inp_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) id!: string;
  @ApiProperty({ enum: ['input'] }) object!: 'input';
  @ApiProperty({ example: 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) session_id!: string;
  @ApiProperty({ example: 'msg_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B', description: 'The user message the input was committed as.' }) message_id!: string;
  @ApiProperty({
    enum: INPUT_DISPOSITIONS,
    example: 'started',
    description:
      'Where the input went: `started` (a new run, the session\'s active one), `queued` (a new run behind the active one: enqueue, interrupt), `steered` (handed to the active run), `followed_up` (steered, but that run ended before taking it: the one follow-up run took it over), `rejected` (it will never be taken: its queued run was refused when due to start, `access_revoked`).',
  })
  disposition!: InputDisposition;
  @ApiProperty({ example: 'run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B', description: 'The run that took or will take the message (a follow-up names the follow-up run).' }) run_id!: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: null, description: 'When a model turn of `run_id` took the message; null before.' }) taken_at!: string | null;
  @ApiProperty({ type: String, format: 'date-time' }) created_at!: string;

  static from(r: InputReceipt): InputReceiptDto {
    return {
      id: r.id,
      object: 'input',
      session_id: r.sessionId,
      message_id: r.messageId,
      disposition: r.disposition,
      run_id: r.runId,
      taken_at: r.takenAt ? r.takenAt.toISOString() : null,
      created_at: r.createdAt.toISOString(),
    };
  }
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
  @ApiPropertyOptional({
    enum: [true],
    description: "Present (true) when the input answered the active run's `ask_user` (it was `waiting_for_input`; any `concurrency`): `run_id` is that run, which continues with the input as the tool's result.",
  })
  answered?: true;
  @ApiProperty({ type: RunStreamDto }) stream!: RunStreamDto;
  @ApiProperty({ type: InputReceiptDto, description: 'The input\'s persistent receipt (also at GET /v1/inputs/{id}); a replayed Idempotency-Key answers it as it is now.' })
  receipt!: InputReceiptDto;
}

export class RunListResponseDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [RunResponseDto] }) data!: RunResponseDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}
