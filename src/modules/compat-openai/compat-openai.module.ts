import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { CompatSharedModule } from '../compat-shared/compat-shared.module';
import { IdempotencyModule } from '../idempotency/idempotency.module';
import { OpenAiAgentsController } from './api/openai-agents.controller';
import { OpenAiAutomationsController } from './api/openai-automations.controller';
import { OpenAiSubagents } from './application/openai-subagents';

/**
 * The OpenAI Agents API (beta) surface under `/openai/v1` (CONTRACT section 15): controllers,
 * DTOs and mappers over the native commands, queries and event stream. No tables of its own.
 */
@Module({
  imports: [AgentsModule, CompatSharedModule, IdempotencyModule],
  controllers: [OpenAiAutomationsController, OpenAiAgentsController],
  providers: [OpenAiSubagents],
})
export class CompatOpenAiModule {}
