import { Module } from '@nestjs/common';
import { AgentCatalog } from './domain/agent-definition';
import { FileAgentCatalog } from './infrastructure/file-agent-catalog';

/** Agents: definitions (versioned files), models and tools. */
@Module({
  providers: [{ provide: AgentCatalog, useClass: FileAgentCatalog }],
  exports: [AgentCatalog],
})
export class AgentsModule {}
