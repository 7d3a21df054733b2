import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { CqrsModule } from '@nestjs/cqrs';
import { ApiKeysService } from './common/auth/api-keys.service';
import { AuthGuard } from './common/auth/auth.guard';
import { AppConfig } from './common/config/app-config';
import { OutboundModule } from './common/outbound/outbound.module';
import { OutboxModule } from './common/outbox/outbox.module';
import { ConfigModule } from './common/config/config.module';
import { Clock } from './common/clock/clock';
import { ClockModule } from './common/clock/clock.module';
import { DatabaseModule, DatabaseTargetModule } from './common/database/database.module';
import { AllExceptionsFilter } from './common/errors/all-exceptions.filter';
import { HealthModule } from './common/health/health.module';
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
import { SecretsModule } from './modules/secrets/secrets.module';
import { UsageModule } from './modules/usage/usage.module';
import { SessionsModule } from './modules/sessions/sessions.module';
import { WebhooksModule } from './modules/webhooks/webhooks.module';
import { AutomationsModule } from './modules/automations/automations.module';

@Module({})
export class AppModule {
  /** `clock`: the time that decides (default the system clock; tests hand in a FakeClock). */
  static forRoot(config: AppConfig, clock?: Clock): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        ClockModule.forRoot(clock),
        DatabaseTargetModule,
        MetricsModule,
        HealthModule,
        OutboundModule.forRoot(config.outboundUrlAllowlist),
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
        AutomationsModule,
        SecretsModule,
        UsageModule,
        OpsModule,
        CompatOpenAiModule,
      ],
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
