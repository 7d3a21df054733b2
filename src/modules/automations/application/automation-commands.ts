import { Command, CommandHandler, ICommandHandler, QueryBus } from '@nestjs/cqrs';
import { canSee, Principal } from '../../../common/auth/principal';
import { AppConfig } from '../../../common/config/app-config';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { DomainError, invalidRequest } from '../../../common/errors/domain-error';
import { newId } from '../../../common/ids/ids';
import { GetAgentQuery } from '../../agents/application/queries/agent-queries';
import type { ContentPart } from '../../agents/domain/model-provider';
import { GetSessionQuery } from '../../sessions/application/queries/get-session/get-session.query';
import {
  assertSchedule,
  AutomationCreatedBy,
  AutomationInvocation,
  automationLimitReached,
  automationNotFound,
  AutomationProps,
  AutomationSchedule,
  AutomationTarget,
  nextSlot,
} from '../domain/automation';
import { AutomationClock } from '../domain/automation-clock';
import { AutomationRepository } from '../domain/automation.repository';
import { AutomationInvoker } from './automation-invoker';

/** Field names of the schedule in error details (native body, or the OpenAI SDK's top-level params). */
export interface ScheduleFields {
  expression: string;
  timezone: string;
  at: string;
}
export const NATIVE_SCHEDULE_FIELDS: ScheduleFields = { expression: 'schedule.expression', timezone: 'schedule.timezone', at: 'schedule.at' };

export interface AutomationInput {
  name: string;
  schedule: AutomationSchedule;
  target: AutomationTarget;
  input: { role: 'user'; content: ContentPart[] };
  enabled?: boolean;
  metadata?: Record<string, string>;
  createdBy?: AutomationCreatedBy;
}

export class CreateAutomationCommand extends Command<Readonly<AutomationProps>> {
  constructor(
    readonly principal: Principal,
    readonly input: AutomationInput,
    readonly fields: ScheduleFields = NATIVE_SCHEDULE_FIELDS,
  ) {
    super();
  }
}

export class UpdateAutomationCommand extends Command<Readonly<AutomationProps>> {
  constructor(
    readonly principal: Principal,
    readonly id: string,
    readonly changes: Partial<Omit<AutomationInput, 'enabled' | 'createdBy'>>,
    readonly fields: ScheduleFields = NATIVE_SCHEDULE_FIELDS,
  ) {
    super();
  }
}

export class DeleteAutomationCommand extends Command<void> {
  constructor(
    readonly principal: Principal,
    readonly id: string,
  ) {
    super();
  }
}

export class SetAutomationPausedCommand extends Command<Readonly<AutomationProps>> {
  constructor(
    readonly principal: Principal,
    readonly id: string,
    readonly paused: boolean,
  ) {
    super();
  }
}

/** Run now: a manual invocation, queued and delivered right after the commit (the schedule is not touched). */
export class InvokeAutomationCommand extends Command<AutomationInvocation> {
  constructor(
    readonly principal: Principal,
    readonly id: string,
  ) {
    super();
  }
}

/** The automation if the caller may see it (members their own, admins the tenant's), else the same 404 as a missing id. */
export async function loadVisible(repo: AutomationRepository, principal: Principal, id: string): Promise<AutomationProps> {
  const a = await repo.find(id);
  if (!a || !canSee(principal, a)) throw automationNotFound(id);
  return a;
}

/** Checks the target exists for the caller (an agent of the tenant, or a session the caller sees). */
async function assertTarget(queries: QueryBus, principal: Principal, target: AutomationTarget): Promise<void> {
  if (target.type === 'new_session') await queries.execute(new GetAgentQuery(principal, target.agentId));
  else await queries.execute(new GetSessionQuery(principal, target.sessionId));
}

@CommandHandler(CreateAutomationCommand)
export class CreateAutomationHandler implements ICommandHandler<CreateAutomationCommand> {
  constructor(
    private readonly repo: AutomationRepository,
    private readonly queries: QueryBus,
    private readonly clock: AutomationClock,
    private readonly config: AppConfig,
  ) {}

  async execute({ principal, input, fields }: CreateAutomationCommand) {
    const now = this.clock.date();
    assertSchedule(input.schedule, now, fields);
    await assertTarget(this.queries, principal, input.target);
    const enabled = input.enabled ?? true;
    const a: AutomationProps = {
      id: newId('auto'),
      tenantId: principal.tenantId,
      subjectId: principal.subjectId,
      ownerRole: principal.role,
      name: input.name,
      schedule: input.schedule,
      target: input.target,
      input: input.input,
      status: enabled ? 'active' : 'paused',
      metadata: input.metadata ?? {},
      createdBy: input.createdBy ?? { type: 'developer' },
      nextRunAt: enabled ? nextSlot(input.schedule, now) : null,
      revision: 1,
      createdAt: now,
      updatedAt: now,
    };
    const over = await this.repo.insertWithinCaps(a, { perTenant: this.config.automationsMaxPerTenant, perMember: this.config.automationsMaxPerMember });
    if (over) throw automationLimitReached(over);
    return a;
  }
}

/** Reloads and retries once when a scheduler moved the row in between (its progress is not an edit). */
async function saveEdit(repo: AutomationRepository, uow: UnitOfWork, principal: Principal, id: string, edit: (a: AutomationProps) => AutomationProps | Promise<AutomationProps>) {
  for (let attempt = 0; ; attempt++) {
    const current = await loadVisible(repo, principal, id);
    const next = await edit({ ...current });
    if (next === current) return current;
    const saved = await uow.run(() => repo.update({ ...next, revision: current.revision + 1 }, current.revision));
    if (saved) return { ...next, revision: current.revision + 1 };
    if (attempt >= 3) throw new Error(`automation ${id} kept changing while it was edited`);
  }
}

@CommandHandler(UpdateAutomationCommand)
export class UpdateAutomationHandler implements ICommandHandler<UpdateAutomationCommand> {
  constructor(
    private readonly repo: AutomationRepository,
    private readonly queries: QueryBus,
    private readonly clock: AutomationClock,
    private readonly uow: UnitOfWork,
  ) {}

  async execute({ principal, id, changes, fields }: UpdateAutomationCommand) {
    return saveEdit(this.repo, this.uow, principal, id, async (a) => {
      const now = this.clock.date();
      if (changes.schedule !== undefined) {
        if (changes.schedule.type !== a.schedule.type) {
          throw invalidRequest(`the schedule type of an automation cannot change (it is ${a.schedule.type})`, [{ field: 'schedule.type', message: `must stay ${a.schedule.type}` }]);
        }
        if (a.status === 'completed') throw invalidRequest('a completed one-time automation has fired: create a new one', [{ field: fields.at, message: 'the automation has completed' }]);
        assertSchedule(changes.schedule, now, fields);
      }
      if (changes.target !== undefined) {
        if (changes.target.type !== a.target.type) throw invalidRequest(`the target type cannot change (it is ${a.target.type})`, [{ field: 'target.type', message: `must stay ${a.target.type}` }]);
        await assertTarget(this.queries, principal, changes.target);
      }
      const schedule = changes.schedule ?? a.schedule;
      return {
        ...a,
        name: changes.name ?? a.name,
        schedule,
        target: changes.target ?? a.target,
        input: changes.input ?? a.input,
        metadata: changes.metadata ?? a.metadata,
        nextRunAt: changes.schedule !== undefined && a.status === 'active' ? nextSlot(schedule, now) : a.nextRunAt,
        updatedAt: now,
      };
    });
  }
}

@CommandHandler(SetAutomationPausedCommand)
export class SetAutomationPausedHandler implements ICommandHandler<SetAutomationPausedCommand> {
  constructor(
    private readonly repo: AutomationRepository,
    private readonly clock: AutomationClock,
    private readonly uow: UnitOfWork,
  ) {}

  async execute({ principal, id, paused }: SetAutomationPausedCommand) {
    return saveEdit(this.repo, this.uow, principal, id, (a) => {
      const now = this.clock.date();
      if (paused) {
        if (a.status !== 'active') return a; // paused stays paused; completed has nothing to pause
        return { ...a, status: 'paused', nextRunAt: null, updatedAt: now };
      }
      if (a.status === 'active') return a;
      const next = nextSlot(a.schedule, now);
      if (a.status === 'completed' || next === null) {
        throw invalidRequest('this one-time automation has no future run: update `at` (run_at) to a future time first', [{ field: 'schedule.at', message: 'must be in the future to resume' }]);
      }
      return { ...a, status: 'active', nextRunAt: next, updatedAt: now };
    });
  }
}

@CommandHandler(DeleteAutomationCommand)
export class DeleteAutomationHandler implements ICommandHandler<DeleteAutomationCommand> {
  constructor(
    private readonly repo: AutomationRepository,
    private readonly uow: UnitOfWork,
  ) {}

  async execute({ principal, id }: DeleteAutomationCommand) {
    await loadVisible(this.repo, principal, id);
    // Its invocations go with it; the sessions and runs it started stay.
    if (!(await this.uow.run(() => this.repo.delete(id)))) throw automationNotFound(id);
  }
}

@CommandHandler(InvokeAutomationCommand)
export class InvokeAutomationHandler implements ICommandHandler<InvokeAutomationCommand> {
  constructor(
    private readonly repo: AutomationRepository,
    private readonly clock: AutomationClock,
    private readonly uow: UnitOfWork,
    private readonly invoker: AutomationInvoker,
  ) {}

  async execute({ principal, id }: InvokeAutomationCommand) {
    const a = await loadVisible(this.repo, principal, id);
    const now = this.clock.date();
    const inv: AutomationInvocation = {
      id: newId('ainv'),
      automationId: a.id,
      tenantId: a.tenantId,
      source: 'manual',
      slot: null,
      status: 'queued',
      skipReason: null,
      error: null,
      runId: null,
      sessionId: a.target.type === 'session' ? a.target.sessionId : null,
      createdAt: now,
      updatedAt: now,
    };
    await this.uow.run(async () => {
      await this.repo.insertInvocation(inv);
      this.uow.afterCommit(() => this.invoker.deliverSoon(inv.id));
    });
    return inv;
  }
}
