import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { CqrsModule } from '@nestjs/cqrs';
import { ApiKeysService } from './common/auth/api-keys.service';
import { AuthGuard } from './common/auth/auth.guard';
import { AppConfig } from './common/config/app-config';
import { OutboundModule } from './common/outbound/outbound.module';
import { OutboxModule } from './common/outbox/outbox.module';
import { ConfigModule } from './common/config/config.module';
import { DatabaseModule } from './common/database/database.module';
import { AllExceptionsFilter } from './common/errors/all-exceptions.filter';
import { HealthController } from './common/health/health.controller';
import { MetricsModule } from './common/metrics/metrics.module';
import { SharedRedisModule } from './common/redis/shared-redis';
import { ContractValidationPipe } from './common/http/validation';
import { PathIdGuard } from './common/http/path-ids';
import { AgentsModule } from './modules/agents/agents.module';
import { ApprovalsModule } from './modules/approvals/approvals.module';
import { AttachmentsModule } from './modules/attachments/attachments.module';
import { AuditModule } from './modules/audit/audit.module';
import { CompatAgUiModule } from './modules/compat-ag-ui/compat-ag-ui.module';
import { CompatOpenAiModule } from './modules/compat-openai/compat-openai.module';
import { EventsModule } from './modules/events/events.module';
import { IdempotencyModule } from './modules/idempotency/idempotency.module';
import { OpsModule } from './modules/ops/ops.module';
import { RunsModule } from './modules/runs/runs.module';
import { SessionsModule } from './modules/sessions/sessions.module';
import { WebhooksModule } from './modules/webhooks/webhooks.module';

@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        MetricsModule,
        OutboundModule,
        SharedRedisModule,
        DatabaseModule,
        OutboxModule,
        CqrsModule.forRoot(),
        IdempotencyModule,
        AgentsModule,
        SessionsModule,
        RunsModule,
        EventsModule,
        ApprovalsModule,
        AttachmentsModule,
        AuditModule,
        CompatAgUiModule,
        WebhooksModule,
        OpsModule,
        CompatOpenAiModule,
      ],
      controllers: [HealthController],
      providers: [
        ApiKeysService,
        { provide: APP_GUARD, useClass: AuthGuard },
        // After AuthGuard (registration order): a malformed path id is its resource's 404.
        { provide: APP_GUARD, useClass: PathIdGuard },
        { provide: APP_PIPE, useClass: ContractValidationPipe },
        { provide: APP_FILTER, useClass: AllExceptionsFilter },
      ],
    };
  }
}
