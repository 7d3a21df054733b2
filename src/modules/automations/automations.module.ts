import { Module } from '@nestjs/common';
import { AutomationsController } from './api/automations.controller';
import {
  CreateAutomationHandler,
  DeleteAutomationHandler,
  InvokeAutomationHandler,
  SetAutomationPausedHandler,
  UpdateAutomationHandler,
} from './application/automation-commands';
import { AutomationInvoker } from './application/automation-invoker';
import { AutomationFollowUps } from './application/automation-follow-ups';
import { FollowUpScheduler } from '../agents/domain/tool';
import {
  GetAutomationHandler,
  GetAutomationInvocationHandler,
  ListAutomationInvocationsHandler,
  ListAutomationsHandler,
} from './application/automation-queries';
import { Clock } from '../../common/clock/clock';
import { AutomationClock, ServiceAutomationClock } from './domain/automation-clock';
import { AutomationRepository } from './domain/automation.repository';
import { AutomationPgRepository } from './infrastructure/automation.pg-repository';

/**
 * Automations (CONTRACT section 17): schedules that deliver input to new or existing sessions.
 * Own tables (`automations`, `automation_invocations`); sessions, runs and agents are reached only
 * through their commands and queries (CreateSessionCommand, CreateRunCommand, GetSessionQuery,
 * GetAgentQuery), on the command and query buses.
 */
@Module({
  controllers: [AutomationsController],
  providers: [
    { provide: AutomationClock, useFactory: (clock: Clock) => new ServiceAutomationClock(clock), inject: [Clock] },
    { provide: AutomationRepository, useClass: AutomationPgRepository },
    CreateAutomationHandler,
    UpdateAutomationHandler,
    DeleteAutomationHandler,
    SetAutomationPausedHandler,
    InvokeAutomationHandler,
    GetAutomationHandler,
    ListAutomationsHandler,
    ListAutomationInvocationsHandler,
    GetAutomationInvocationHandler,
    AutomationInvoker,
    { provide: FollowUpScheduler, useClass: AutomationFollowUps },
  ],
  exports: [AutomationClock],
})
export class AutomationsModule {}
