import { Injectable } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { invalidRequest } from '../../../common/errors/domain-error';
import { FollowUpScheduler } from '../../agents/domain/tool';
import { AutomationSchedule } from '../domain/automation';
import { CreateAutomationCommand } from './automation-commands';

/**
 * The built-in tool `schedule_follow_up` (CONTRACT section 17): an automation whose target is the
 * run's own session, `created_by: {"type":"agent","session_id","tool_call_id"}`, owned by the
 * session's owner (a member's rights: it reaches only that owner's sessions).
 */
@Injectable()
export class AutomationFollowUps extends FollowUpScheduler {
  constructor(private readonly commands: CommandBus) {
    super();
  }

  async schedule(ctx: { tenantId: string; subjectId: string; sessionId: string; toolCallId: string }, req: { at?: string; cron?: string; timezone?: string; input: string }) {
    let schedule: AutomationSchedule;
    if (req.at !== undefined) {
      const at = new Date(req.at);
      if (Number.isNaN(at.getTime())) throw invalidRequest('at must be an ISO 8601 time', [{ field: 'at', message: 'must be an ISO 8601 time' }]);
      schedule = { type: 'once', at };
    } else {
      schedule = { type: 'cron', expression: req.cron!, timezone: req.timezone ?? 'UTC' };
    }
    const a = await this.commands.execute(
      new CreateAutomationCommand(
        { tenantId: ctx.tenantId, subjectId: ctx.subjectId, role: 'member', keyId: `agent:${ctx.sessionId}` },
        {
          name: `follow-up from ${ctx.toolCallId}`,
          schedule,
          target: { type: 'session', sessionId: ctx.sessionId },
          input: { role: 'user', content: [{ type: 'text', text: req.input }] },
          createdBy: { type: 'agent', sessionId: ctx.sessionId, toolCallId: ctx.toolCallId },
        },
        { expression: 'cron', timezone: 'timezone', at: 'at' },
      ),
    );
    return { automation_id: a.id, status: a.status, next_run_at: a.nextRunAt?.toISOString() ?? null };
  }
}
