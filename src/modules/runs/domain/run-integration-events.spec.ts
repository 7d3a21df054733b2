import { RUN_STATUSES } from './run-status';
import { runIntegrationEvents, runIntegrationEventType } from './run-integration-events';

describe('run integration events', () => {
  const table = [
    ['queued', null],
    ['running', null],
    ['cancelling', null],
    ['waiting_for_approval', 'run.requires_action'],
    ['waiting_for_tool', 'run.requires_action'],
    ['waiting_for_input', 'run.requires_action'],
    ['waiting_for_callback', null],
    ['waiting_for_timer', null],
    ['waiting_for_quota', null],
    ['waiting_for_subagents', null],
    ['completed', 'run.completed'],
    ['failed', 'run.failed'],
    ['cancelled', 'run.cancelled'],
    ['expired', 'run.expired'],
    ['terminated', 'run.terminated'],
  ] as const;
  it.each(table)('a move into %s publishes %s', (status, type) => {
    expect(runIntegrationEventType(status)).toBe(type);
  });

  it('the table covers every status', () => {
    expect(table.map(([s]) => s).sort()).toEqual([...RUN_STATUSES].sort());
  });

  it('one event per notified move of a save, in order, with the status and session as payload', () => {
    const run = { id: 'run_1', tenantId: 'tenant_a', sessionId: 'sess_1' };
    expect(runIntegrationEvents(run, ['running', 'waiting_for_tool'])).toEqual([
      { tenantId: 'tenant_a', type: 'run.requires_action', objectId: 'run_1', payload: { status: 'waiting_for_tool', session_id: 'sess_1' } },
    ]);
    expect(runIntegrationEvents(run, ['running', 'waiting_for_approval', 'running', 'completed']).map((e) => e.type)).toEqual(['run.requires_action', 'run.completed']);
    expect(runIntegrationEvents(run, ['running'])).toEqual([]);
  });
});
