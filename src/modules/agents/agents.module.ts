import { Logger, Module, OnModuleInit } from '@nestjs/common';
import { OutboundHttpClient } from '../../common/outbound/outbound-http';
import { AgentsController } from './api/agents.controller';
import { ModelsController } from './api/models.controller';
import { ListModelsHandler } from './application/queries/model-queries';
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
import { FileModelCatalog } from './infrastructure/models/model-registry';
import { ModelCatalog } from './domain/model-catalog';
import { ScriptedModelProvider } from './infrastructure/models/scripted-model-provider';
import { schemaProblem } from './infrastructure/tools/ajv-validator';
import { DefaultToolRegistry } from './infrastructure/tools/default-tool-registry';
import { DemoTicketTypeormStore } from './infrastructure/tools/demo-ticket.typeorm-store';
import { ExternalTools } from './infrastructure/tools/external-tools';
import { HeaderSecrets } from './infrastructure/tools/secret-headers';
import { AppConfig } from '../../common/config/app-config';
import { secretRefs } from './domain/tool-entries';

/** Agents: definitions (versioned files and API agents), models and tools (built-in, http, mcp, function). */
@Module({
  controllers: [AgentsController, ModelsController],
  providers: [
    { provide: AgentCatalog, useClass: FileAgentCatalog },
    { provide: DemoTicketStore, useClass: DemoTicketTypeormStore },
    HeaderSecrets,
    ExternalTools,
    { provide: ToolRegistry, useClass: DefaultToolRegistry },
    { provide: AgentDirectory, useClass: DefaultAgentDirectory },
    ScriptedModelProvider,
    { provide: ModelCatalog, useClass: FileModelCatalog },
    { provide: ModelRouter, useClass: DefaultModelRouter },
    ListAgentsHandler,
    ListModelsHandler,
    GetAgentHandler,
    GetPinnedAgentHandler,
    ListAgentVersionsHandler,
    PrepareAgentVersionHandler,
    CreateAgentVersionHandler,
    DeleteAgentHandler,
  ],
  exports: [AgentCatalog, AgentDirectory, ModelCatalog, ModelRouter, ToolRegistry],
})
export class AgentsModule implements OnModuleInit {
  constructor(
    private readonly catalog: AgentCatalog,
    private readonly tools: ToolRegistry,
    private readonly outbound: OutboundHttpClient,
    private readonly config: AppConfig,
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
        // A file agent is shared: each ${env:NAME} it names must be listed in TOOL_ENV_SECRETS (for someone).
        a.tools.forEach((t, i) => {
          if (typeof t === 'string' || t.type === 'function') return;
          for (const [k, v] of Object.entries(t.headers ?? {})) {
            const parsed = secretRefs(v);
            if ('problem' in parsed) continue;
            for (const r of parsed.refs) {
              if (r.kind === 'env' && !this.config.toolEnvSecrets.listed(r.name)) {
                problems.push(`agent ${a.id} v${a.version}: tools[${i}].headers.${k}: \${env:${r.name}} is not listed in TOOL_ENV_SECRETS`);
              }
            }
          }
        });
      }
    }
    if (problems.length) throw new Error(`agent definitions: ${problems.join('; ')}`);
    new Logger('Agents').debug(`tools: ${this.tools.all().map((t) => t.name).join(', ')}`);
  }
}
