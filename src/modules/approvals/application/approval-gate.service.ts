import { Injectable } from '@nestjs/common';
import { ConcurrencyConflict } from '../../../common/errors/domain-error';
import { ApprovalDecisionRecord, ApprovalGate, ApprovalToOpen } from '../../runs/domain/approval-gate';
import { Approval } from '../domain/approval.aggregate';
import { ApprovalRepository } from '../domain/approval.repository';

/** The runs module's ApprovalGate: approval rows opened, decided and closed inside a run's commit. */
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

  async recordDecision(d: ApprovalDecisionRecord): Promise<void> {
    const approval = await this.repo.findById(d.approvalId);
    // Decided or closed since the caller read it: the caller reads it again and answers from it.
    const conflict = () => new ConcurrencyConflict('approval', d.approvalId, approval?.expectedVersion ?? 0);
    if (!approval || approval.status !== 'pending') throw conflict();
    approval.decide(d.decision, d.decidedBy, d.reason, d.at);
    if (!(await this.repo.save(approval))) throw conflict();
  }

  async closeForRun(runId: string, status: 'cancelled' | 'expired'): Promise<void> {
    const now = new Date();
    for (const a of await this.repo.pendingOfRun(runId)) {
      a.close(status, now);
      await this.repo.save(a);
    }
  }
}
