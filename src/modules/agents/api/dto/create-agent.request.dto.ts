import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsObject, IsString, Matches, MaxLength } from 'class-validator';
import { MayOmit } from '../../../../common/http/validation';

const TOOLS_DESCRIPTION =
  'Each entry: a built-in tool name (`"get_time"`), or ' +
  '`{"type":"http","name","description","parameters":<JSON Schema>,"url","headers"?,"timeout_ms"?,"risk"?,"visibility"?,"idempotent"?}`, ' +
  '`{"type":"mcp","server","url","headers"?,"tools"?:[names]|"*","risk"?,"visibility"?,"idempotent"?}` (Streamable HTTP; its tools are listed now and pinned with the version, named `<server>.<tool>`), or ' +
  '`{"type":"function","name","description","parameters"}` (executed by the client). URLs must be inside OUTBOUND_URL_ALLOWLIST. ' +
  'Header values may name a secret as `${env:NAME}`: resolved from the server environment at call time, never stored, shown or given to the model.';

export class AgentVersionBodyDto {
  @ApiPropertyOptional({ maxLength: 2000, example: 'Looks customers up in the CRM and opens refunds.' })
  @MayOmit()
  @IsString()
  @MaxLength(2000)
  description?: string;

  @ApiPropertyOptional({ example: 'scripted', description: 'Default model of new sessions (default `scripted`).' })
  @MayOmit()
  @IsString()
  @MaxLength(200)
  model?: string;

  @ApiPropertyOptional({ maxLength: 20000, example: 'You are a careful support agent.' })
  @MayOmit()
  @IsString()
  @MaxLength(20000)
  instructions?: string;

  @ApiProperty({
    description: TOOLS_DESCRIPTION,
    type: 'array',
    items: { oneOf: [{ type: 'string' }, { type: 'object', additionalProperties: true }] },
    example: [
      'get_time',
      { type: 'mcp', server: 'crm', url: 'http://127.0.0.1:8931/mcp', headers: { Authorization: 'Bearer ${env:CRM_TOKEN}' }, tools: '*', idempotent: true },
      {
        type: 'http',
        name: 'refund',
        description: 'Refunds an order.',
        parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
        url: 'http://127.0.0.1:8932/refund',
        risk: 'approve',
        idempotent: true,
      },
    ],
  })
  @IsArray()
  @ArrayMaxSize(128)
  tools!: unknown[];

  @ApiPropertyOptional({
    type: [String],
    maxItems: 32,
    example: ['billing_agent'],
    description:
      'Agents (of this tenant: file agents or its API agents) this one may hand the run to (CONTRACT 16). Each is pinned at its newest version and offered to the model as a tool ' +
      '`transfer_to_<agent_id>` `{reason?}`; an unknown id: 400.',
  })
  @MayOmit()
  @IsArray()
  @ArrayMaxSize(32)
  @IsString({ each: true })
  handoffs?: string[];

  @ApiPropertyOptional({
    type: 'object',
    properties: { enabled: { type: 'boolean' }, agents: { type: 'array', items: { type: 'string' } }, max_concurrent: { type: 'integer', minimum: 1, maximum: 32 } },
    required: ['enabled'],
    example: { enabled: true, agents: ['assistant'], max_concurrent: 3 },
    description:
      'Subagents (CONTRACT 16): the model gets `create_subagent`, `send_subagent_input`, `wait_for_subagents` and `close_subagent`; `agents` (of this tenant, pinned at their newest version) it may run besides this one; at most `max_concurrent` (default 6) subagent runs per parent run at once.',
  })
  @MayOmit()
  @IsObject()
  subagents?: Record<string, unknown>;
}

export class CreateAgentRequestDto extends AgentVersionBodyDto {
  @ApiProperty({ example: 'crm_agent', description: 'Unique within the tenant and not a file agent id; `[a-z0-9_-]{1,64}`.' })
  @IsString()
  @Matches(/^[a-z0-9_-]{1,64}$/, { message: 'id must match [a-z0-9_-]{1,64}' })
  id!: string;
}

export class CreateAgentVersionRequestDto extends AgentVersionBodyDto {
  @ApiPropertyOptional({ example: 'crm_agent', description: 'If given, must be the id in the path.' })
  @MayOmit()
  @IsString()
  id?: string;
}
