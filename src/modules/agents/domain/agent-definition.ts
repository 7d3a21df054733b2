/** An agent as defined in a versioned config file under `agents/` (`<id>.v<version>.json`). */
export interface AgentDefinition {
  id: string;
  version: string;
  description: string;
  model: string;
  instructions: string;
  tools: string[];
}

/** Port: the configured agents, every version kept so pinned sessions still resolve. */
export abstract class AgentCatalog {
  /** The newest version of each agent. */
  abstract list(): AgentDefinition[];
  /** The newest version, or a given one. */
  abstract get(id: string, version?: string): AgentDefinition | null;
  /** Model names a session or run may choose. */
  abstract knownModels(): string[];
}
