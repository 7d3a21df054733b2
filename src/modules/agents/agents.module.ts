import { Logger, Module, OnModuleInit } from '@nestjs/common';
import { AgentsController } from './api/agents.controller';
import { GetAgentHandler } from './application/queries/get-agent/get-agent.handler';
import { ListAgentsHandler } from './application/queries/list-agents/list-agents.handler';
import { AgentCatalog } from './domain/agent-definition';
import { DemoTicketStore } from './domain/demo-ticket.store';
import { ModelRouter } from './domain/model-provider';
import { ToolRegistry } from './domain/tool';
import { FileAgentCatalog } from './infrastructure/file-agent-catalog';
import { DefaultModelRouter } from './infrastructure/models/default-model-router';
import { OpenAiModelProvider } from './infrastructure/models/openai-model-provider';
import { ScriptedModelProvider } from './infrastructure/models/scripted-model-provider';
import { DefaultToolRegistry } from './infrastructure/tools/default-tool-registry';
import { DemoTicketTypeormStore } from './infrastructure/tools/demo-ticket.typeorm-store';

/** Agents: definitions (versioned files), models and tools. */
@Module({
  controllers: [AgentsController],
  providers: [
    { provide: AgentCatalog, useClass: FileAgentCatalog },
    { provide: DemoTicketStore, useClass: DemoTicketTypeormStore },
    { provide: ToolRegistry, useClass: DefaultToolRegistry },
    ScriptedModelProvider,
    OpenAiModelProvider,
    { provide: ModelRouter, useClass: DefaultModelRouter },
    ListAgentsHandler,
    GetAgentHandler,
  ],
  exports: [AgentCatalog, ModelRouter, ToolRegistry],
})
export class AgentsModule implements OnModuleInit {
  constructor(
    private readonly catalog: AgentCatalog,
    private readonly tools: ToolRegistry,
  ) {}

  /** An agent naming a tool that does not exist is a configuration error: stop at start-up. */
  onModuleInit(): void {
    const problems = this.catalog
      .list()
      .flatMap((a) => a.tools.filter((t) => !this.tools.get(t)).map((t) => `agent ${a.id} v${a.version} names unknown tool "${t}"`));
    if (problems.length) throw new Error(`agent definitions: ${problems.join('; ')}`);
    new Logger('Agents').debug(`tools: ${this.tools.all().map((t) => t.name).join(', ')}`);
  }
}
