import { Injectable, Optional } from '@nestjs/common';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { SessionRepository } from '../../sessions/domain/session.repository';
import { ApprovalGate } from '../domain/approval-gate';
import { Run } from '../domain/run.aggregate';
import { RunRepository } from '../domain/run.repository';
import { RunSignals } from './run-signals';

/**
 * Saves a run (row + events) and keeps the session's `active_run_id` / `last_active_at` true in
 * the same transaction; after commit, wakes the worker when a run ended (the next queued run
 * of the session may start).
 */
@Injectable()
export class RunPersistence {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly runs: RunRepository,
    private readonly sessions: SessionRepository,
    private readonly signals: RunSignals,
    @Optional() private readonly approvals?: ApprovalGate,
  ) {}

  async save(run: Run, inTx?: () => Promise<void>): Promise<void> {
    const endedNow = run.isTerminal;
    await this.uow.run(async () => {
      // Lock order everywhere: session row, then run row, then event counters.
      if (endedNow) await this.sessions.lock(run.owner.sessionId);
      if (inTx) await inTx();
      await this.runs.save(run);
      if (endedNow) {
        await this.approvals?.closeForRun(run.id, run.status === 'expired' ? 'expired' : 'cancelled');
        const next = await this.runs.findActiveInSession(run.owner.sessionId);
        await this.sessions.setActiveRun(run.owner.sessionId, next, new Date());
        this.uow.afterCommit(() => this.signals.workAvailable());
      }
    });
  }
}
