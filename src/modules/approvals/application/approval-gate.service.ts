import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../../common/config/app-config';
import { newId } from '../../../common/ids/ids';
import { ApprovalGate } from '../../runs/domain/approval-gate';
import { PendingToolCall, Run } from '../../runs/domain/run.aggregate';
import { Approval } from '../domain/approval.aggregate';
import { ApprovalRepository } from '../domain/approval.repository';

/** Opens approvals inside the loop's transaction and closes them when their run ends. */
@Injectable()
export class ApprovalGateService extends ApprovalGate {
  constructor(
    private readonly repo: ApprovalRepository,
    private readonly config: AppConfig,
  ) {
    super();
  }

  async open(run: Run, call: PendingToolCall) {
    const now = new Date();
    const o = run.owner;
    const approval = Approval.open({
      id: newId('apr'),
      tenantId: o.tenantId,
      subjectId: o.subjectId,
      sessionId: o.sessionId,
      runId: o.runId,
      toolCallId: call.tool_call_id,
      toolName: call.tool_name,
      arguments: call.arguments,
      risk: call.risk ?? 'approve',
      createdAt: now,
      expiresAt: new Date(now.getTime() + this.config.approvalTtlMs),
    });
    await this.repo.insert(approval);
    const a = approval.snapshot();
    run.record('approval.requested', {
      approval_id: a.id,
      tool_call_id: a.toolCallId,
      tool_name: a.toolName,
      arguments: a.arguments,
      risk: a.risk,
      expires_at: a.expiresAt.toISOString(),
    });
    return { approvalId: a.id, expiresAt: a.expiresAt };
  }

  async closeForRun(runId: string, status: 'cancelled' | 'expired'): Promise<void> {
    const now = new Date();
    for (const a of await this.repo.pendingOfRun(runId)) {
      a.close(status, now);
      await this.repo.save(a);
    }
  }
}
