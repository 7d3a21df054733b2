import { Injectable } from '@nestjs/common';
import { ApprovalGate, ApprovalToOpen } from '../../runs/domain/approval-gate';
import { Approval } from '../domain/approval.aggregate';
import { ApprovalRepository } from '../domain/approval.repository';

/** Opens approvals inside the loop's transaction and closes them when their run ends. */
@Injectable()
export class ApprovalGateService extends ApprovalGate {
  constructor(private readonly repo: ApprovalRepository) {
    super();
  }

  async open(o: ApprovalToOpen): Promise<void> {
    const approval = Approval.open({
      id: o.approvalId,
      tenantId: o.tenantId,
      subjectId: o.subjectId,
      sessionId: o.sessionId,
      runId: o.runId,
      toolCallId: o.call.tool_call_id,
      toolName: o.call.tool_name,
      arguments: o.call.arguments,
      risk: o.call.risk ?? 'approve',
      createdAt: new Date(),
      expiresAt: o.expiresAt,
    });
    await this.repo.insert(approval);
  }

  async closeForRun(runId: string, status: 'cancelled' | 'expired'): Promise<void> {
    const now = new Date();
    for (const a of await this.repo.pendingOfRun(runId)) {
      a.close(status, now);
      await this.repo.save(a);
    }
  }
}
