import { ResolvedAgent } from '../domain/agent-definition';

/** An agent version with its tools resolved (what GET /agents shows). */
export type AgentView = ResolvedAgent;
