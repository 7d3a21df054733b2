import { Logger, Module, OnModuleInit } from '@nestjs/common';
import { OutboundHttpClient } from '../../common/outbound/outbound-http';
import { AgentsController } from './api/agents.controller';
import { CreateAgentVersionHandler, DeleteAgentHandler } from './application/commands/agent-commands';
import { GetAgentHandler, GetPinnedAgentHandler, ListAgentsHandler, ListAgentVersionsHandler, PrepareAgentVersionHandler } from './application/queries/agent-queries';
import { AgentCatalog, AgentDirectory } from './domain/agent-definition';
import { DemoTicketStore } from './domain/demo-ticket.store';
import { ModelRouter } from './domain/model-provider';
import { ToolRegistry } from './domain/tool';
import { parseToolEntries } from './domain/tool-entries';
import { DefaultAgentDirectory } from './infrastructure/agent-directory';
import { FileAgentCatalog } from './infrastructure/file-agent-catalog';
import { DefaultModelRouter } from './infrastructure/models/default-model-router';
import { OpenAiModelProvider } from './infrastructure/models/openai-model-provider';
import { ScriptedModelProvider } from './infrastructure/models/scripted-model-provider';
import { schemaProblem } from './infrastructure/tools/ajv-validator';
import { DefaultToolRegistry } from './infrastructure/tools/default-tool-registry';
import { DemoTicketTypeormStore } from './infrastructure/tools/demo-ticket.typeorm-store';
import { ExternalTools } from './infrastructure/tools/external-tools';

/** Agents: definitions (versioned files and API agents), models and tools (built-in, http, mcp, function). */
@Module({
  controllers: [AgentsController],
  providers: [
    { provide: AgentCatalog, useClass: FileAgentCatalog },
    { provide: DemoTicketStore, useClass: DemoTicketTypeormStore },
    ExternalTools,
    { provide: ToolRegistry, useClass: DefaultToolRegistry },
    { provide: AgentDirectory, useClass: DefaultAgentDirectory },
    ScriptedModelProvider,
    OpenAiModelProvider,
    { provide: ModelRouter, useClass: DefaultModelRouter },
    ListAgentsHandler,
    GetAgentHandler,
    GetPinnedAgentHandler,
    ListAgentVersionsHandler,
    PrepareAgentVersionHandler,
    CreateAgentVersionHandler,
    DeleteAgentHandler,
  ],
  exports: [AgentCatalog, AgentDirectory, ModelRouter, ToolRegistry],
})
export class AgentsModule implements OnModuleInit {
  constructor(
    private readonly catalog: AgentCatalog,
    private readonly tools: ToolRegistry,
    private readonly outbound: OutboundHttpClient,
  ) {}

  /** A file agent naming a tool that does not exist (or a URL outside the allow-list) is a configuration error: stop at start-up. */
  onModuleInit(): void {
    const problems: string[] = [];
    for (const versions of this.catalog.list().map((a) => a.id)) {
      for (let v = 1; v <= Number(this.catalog.get(versions)!.version); v++) {
        const a = this.catalog.get(versions, String(v));
        if (!a) continue;
        const { errors } = parseToolEntries(a.tools, { urlAllowed: (u) => this.outbound.policy.allows(u), builtin: (n) => this.tools.get(n) !== null, schemaProblem });
        for (const e of errors) problems.push(`agent ${a.id} v${a.version}: ${e.field}: ${e.message.replace(/^unknown built-in tool/, 'names unknown tool')}`);
      }
    }
    if (problems.length) throw new Error(`agent definitions: ${problems.join('; ')}`);
    new Logger('Agents').debug(`tools: ${this.tools.all().map((t) => t.name).join(', ')}`);
  }
}
