import { DEFAULT_LIMITS, Run, RunLimits } from '../../src/modules/runs/domain/run.aggregate';

/** A fresh queued run for the runs domain's unit tests (aggregate, decider): fixed ids and clock. */
export function newTestRun(o: { userMessageId?: string; limits?: Partial<RunLimits>; now?: Date; queueTtlMs?: number } = {}): Run {
  return Run.create({
    id: 'run_1',
    tenantId: 't',
    subjectId: 's',
    sessionId: 'sess_1',
    agent: { id: 'a', version: '1' },
    model: 'scripted',
    userMessageId: o.userMessageId ?? 'msg_1',
    limits: { ...DEFAULT_LIMITS, ...o.limits },
    metadata: {},
    now: o.now ?? new Date('2026-01-01T00:00:00Z'),
    queueTtlMs: o.queueTtlMs ?? 1000,
  });
}
