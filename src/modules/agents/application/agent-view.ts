import { AgentDefinition } from '../domain/agent-definition';
import { ToolDefinition, ToolRegistry } from '../domain/tool';

/** An agent with its tools resolved (what GET /agents shows). */
export interface AgentView {
  definition: AgentDefinition;
  tools: ToolDefinition[];
}

export function toAgentView(definition: AgentDefinition, tools: ToolRegistry): AgentView {
  return { definition, tools: definition.tools.flatMap((name) => tools.get(name) ?? []) };
}
