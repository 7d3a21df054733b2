import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsArray, IsBoolean, IsIn, IsInt, IsObject, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { toDecimalInt } from '../../../../common/http/pagination';

/** `after`, `limit`, `order` as the SDK sends them (CursorPage / ConversationCursorPage). */
export class OpenAiListQueryDto {
  @ApiPropertyOptional({ description: 'The id of the last item of the previous page.' })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  after?: string;

  @ApiPropertyOptional({ minimum: 1, maximum: 100, default: 20 })
  @IsOptional()
  @Transform(toDecimalInt)
  @IsInt()
  @Min(1)
  @Max(100)
  limit?: number;

  @ApiPropertyOptional({ enum: ['asc', 'desc'], default: 'desc', description: 'Default `desc` (newest first), as the SDK documents for every list.' })
  @IsOptional()
  @IsIn(['asc', 'desc'])
  order?: 'asc' | 'desc';
}

export class OpenAiSessionListQueryDto extends OpenAiListQueryDto {
  @ApiPropertyOptional({ description: 'Only sessions of this agent.' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  agent_id?: string;
}

/** The fields session create and update share (`spend_control` is refused by the controller). Null is as omitted (the SDK's `| null`). */
class OpenAiSessionFieldsDto {
  @ApiPropertyOptional({ nullable: true, type: 'object', additionalProperties: { type: 'string' } })
  @IsOptional()
  @IsObject()
  metadata?: Record<string, string> | null;

  @ApiPropertyOptional({ nullable: true, enum: ['none', 'auto_review'] })
  @IsOptional()
  @IsIn(['none', 'auto_review'])
  review?: 'none' | 'auto_review';

  @ApiPropertyOptional({ nullable: true })
  @IsOptional()
  spend_control?: unknown;
}

/** `POST /agents/sessions` (SessionCreateParams): what this server supports is checked by the controller. */
export class OpenAiSessionCreateDto extends OpenAiSessionFieldsDto {
  @ApiPropertyOptional({ nullable: true, description: 'Only `{"type":"none"}`.', example: { type: 'none' } })
  @IsOptional()
  environment?: unknown;

  @ApiPropertyOptional({ nullable: true, example: 'support_agent' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  agent_id?: string;

  @ApiPropertyOptional({
    nullable: true,
    description:
      'An inline agent instead of `agent_id`: `model` (required; one of ours, e.g. `scripted`), `instructions`, `tools` of type `function` ' +
      '(`name`, `description`, `parameters`: JSON Schema; executed by the client). Other tool types and settings this server cannot honour are 400 with their `param`.',
    example: { model: 'scripted', instructions: 'Be brief.', tools: [{ type: 'function', name: 'confirm_with_user', description: 'Asks the user.', parameters: { type: 'object' } }] },
  })
  @IsOptional()
  @IsObject()
  agent?: Record<string, unknown>;

  @ApiPropertyOptional({ nullable: true, description: 'A first input: starts a turn at once.' })
  @IsOptional()
  input?: unknown;

  @ApiPropertyOptional({ nullable: true, description: 'Only `false`: stream with `GET .../events` (the SDK\'s `sessions.stream`).' })
  @IsOptional()
  @IsBoolean()
  stream?: boolean;

  @ApiPropertyOptional({ nullable: true, type: [String] })
  @IsOptional()
  @IsArray()
  vault_ids?: string[] | null;
}

export class OpenAiSessionUpdateDto extends OpenAiSessionFieldsDto {
  @ApiPropertyOptional({ nullable: true, description: 'Not supported: the agent is pinned at creation.' })
  @IsOptional()
  @IsObject()
  agent?: Record<string, unknown>;
}

/** `POST /agents/sessions/{id}/events`: the events are checked one by one (input-events.ts). */
export class OpenAiEventsCreateDto {
  @ApiPropertyOptional({
    description:
      'Input events: `agent.session.input.message` `{input: [{role: "user", content: [{type: "input_text", text}]}]}`, `agent.session.input.cancel`, ' +
      '`agent.session.input.tool_result` `{turn_id, call_id, success, output?, error?}`, and our extension `agent.session.input.approval_result` `{approval_id, decision, reason?}`.',
    example: [{ type: 'agent.session.input.message', input: [{ role: 'user', content: [{ type: 'input_text', text: 'What time is it?' }] }] }],
  })
  @IsArray()
  events!: unknown[];
}
