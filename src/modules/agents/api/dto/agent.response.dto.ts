import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { AgentView } from '../../application/agent-view';
import { handoffsOf } from '../../domain/agent-definition';

export class AgentToolDto {
  @ApiProperty({ example: 'create_ticket' }) name!: string;
  @ApiProperty({ enum: ['builtin', 'http', 'mcp', 'function'], example: 'builtin', description: 'How the tool is executed (CONTRACT section 13).' })
  type!: 'builtin' | 'http' | 'mcp' | 'function';
  @ApiProperty({ example: 'Opens a support ticket for an order. Needs a human approval; idempotent per tool call.' }) description!: string;
  @ApiProperty({ enum: ['auto', 'suggest', 'approve'], example: 'approve', description: '`auto` runs, `suggest` runs and is flagged, `approve` needs an approval.' })
  risk!: 'auto' | 'suggest' | 'approve';
  @ApiProperty({ enum: ['public', 'private'], example: 'public', description: '`private`: arguments and results are redacted for members.' })
  visibility!: 'public' | 'private';
  @ApiProperty({ example: true, description: 'Re-running with the same side-effect key has no further effect.' }) idempotent!: boolean;
  @ApiProperty({ enum: ['server', 'client'], example: 'server', description: '`client`: the run waits for `POST /v1/runs/{id}/tool_outputs`.' })
  executor!: 'server' | 'client';
  @ApiPropertyOptional({ type: String, example: 'crm', description: 'mcp tools: the server entry the tool came from.' }) server?: string;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    example: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'], additionalProperties: false },
    description:
      'The JSON Schema of the arguments, exactly as the model is given it: the built-in\'s own schema, the `parameters` an http or function tool was defined with, or the `inputSchema` an MCP server listed (pinned with the version).',
  })
  parameters!: Record<string, unknown>;
}

export class AgentHandoffDto {
  @ApiProperty({ example: 'billing_agent' }) agent_id!: string;
  @ApiProperty({ example: '1', description: 'The version pinned when this agent version was created.' }) version!: string;
}

export class AgentResponseDto {
  @ApiProperty({ example: 'support_agent' }) id!: string;
  @ApiProperty({ enum: ['agent'] }) object!: 'agent';
  @ApiProperty({ example: '1', description: 'Version of the definition (the newest one unless a version was asked for); sessions pin the version they were created with.' })
  version!: string;
  @ApiProperty({ enum: ['file', 'api'], example: 'file', description: '`file`: a versioned file, shared and read-only; `api`: created by this tenant through the API.' })
  source!: 'file' | 'api';
  @ApiProperty({ example: 'Customer support: looks up orders, opens tickets (with human approval) and customers (client-side).' })
  description!: string;
  @ApiProperty({ example: 'scripted', description: 'Default model of new sessions.' }) model!: string;
  @ApiProperty({ type: String, nullable: true, example: null, description: 'API agents: when this version was created.' }) created_at!: string | null;
  @ApiProperty({
    type: [AgentToolDto],
    example: [
      {
        name: 'get_order',
        type: 'builtin',
        description: 'Looks an order up by its id.',
        risk: 'auto',
        visibility: 'public',
        idempotent: true,
        executor: 'server',
        parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
      },
      {
        name: 'create_ticket',
        type: 'builtin',
        description: 'Opens a support ticket for an order.',
        risk: 'approve',
        visibility: 'public',
        idempotent: true,
        executor: 'server',
        parameters: { type: 'object', properties: { order_id: { type: 'string' }, summary: { type: 'string' } }, required: ['order_id', 'summary'] },
      },
      {
        name: 'lookup_customer',
        type: 'builtin',
        description: 'Looks a customer up by e-mail.',
        risk: 'auto',
        visibility: 'private',
        idempotent: false,
        executor: 'client',
        parameters: { type: 'object', properties: { email: { type: 'string' } }, required: ['email'] },
      },
    ],
  })
  tools!: AgentToolDto[];
  @ApiProperty({
    type: [AgentHandoffDto],
    description: 'Agents this version may hand the run to (CONTRACT 16), with the versions it pinned; the model sees each as the tool `transfer_to_<agent_id>`.',
  })
  handoffs!: AgentHandoffDto[];
  @ApiProperty({ type: () => AgentSubagentsDto, nullable: true, description: 'Subagents (CONTRACT 16): null when not enabled.' })
  subagents!: AgentSubagentsDto | null;
}

export class AgentSubagentsDto {
  @ApiProperty({ example: true }) enabled!: boolean;
  @ApiProperty({ type: [AgentHandoffDto], nullable: true, description: 'Agents a subagent may run besides this one (pinned versions); null: only this one.' })
  agents!: AgentHandoffDto[] | null;
  @ApiProperty({ example: 6 }) max_concurrent!: number;
}

function subagentsOf(v: AgentView): AgentSubagentsDto | null {
  const t = v.resolvedTools.find((x) => x.binding.kind === 'subagents');
  if (!t || t.binding.kind !== 'subagents') return null;
  return { enabled: true, agents: t.binding.agents ? t.binding.agents.map((a) => ({ ...a })) : null, max_concurrent: t.binding.max_concurrent };
}

export class AgentListResponseDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [AgentResponseDto] }) data!: AgentResponseDto[];
  @ApiProperty({ type: String, nullable: true, example: 'assistant' }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true, example: 'support_agent' }) last_id!: string | null;
  @ApiProperty({ example: false }) has_more!: boolean;
}

export class AgentVersionListResponseDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [AgentResponseDto] }) data!: AgentResponseDto[];
  @ApiProperty({ example: false }) has_more!: boolean;
}

export function toAgentResponse(v: AgentView): AgentResponseDto {
  return {
    id: v.id,
    object: 'agent',
    version: v.version,
    source: v.source,
    description: v.description,
    model: v.model,
    created_at: v.createdAt ? v.createdAt.toISOString() : null,
    handoffs: handoffsOf(v).map((h) => ({ agent_id: h.id, version: h.version })),
    subagents: subagentsOf(v),
    tools: v.resolvedTools.filter((t) => t.binding.kind !== 'handoff' && t.binding.kind !== 'subagents').map((t) => ({
      name: t.name,
      type: t.binding.kind as AgentToolDto['type'],
      description: t.description,
      risk: t.risk,
      visibility: t.visibility,
      idempotent: t.idempotent,
      executor: t.executor,
      ...(t.binding.kind === 'mcp' ? { server: t.binding.server } : {}),
      parameters: t.parameters,
    })),
  };
}
