import type { IntegrationEvent } from '../../../common/outbox/integration-events';
import { RunProps } from './run.aggregate';
import { isTerminal, RunStatus } from './run-status';

/** The integration events the runs module publishes (CONTRACT section 14's run event types). */
export type RunIntegrationEventType = 'run.completed' | 'run.failed' | 'run.cancelled' | 'run.expired' | 'run.terminated' | 'run.requires_action';

/**
 * The event a move into `status` publishes: the terminal statuses and the waits where a human or
 * the client must act (an approval, a client tool, `ask_user`'s input); none for the others (a
 * callback, a timer or quota end without the client).
 */
export function runIntegrationEventType(status: RunStatus): RunIntegrationEventType | null {
  if (status === 'waiting_for_approval' || status === 'waiting_for_tool' || status === 'waiting_for_input') return 'run.requires_action';
  if (isTerminal(status)) return `run.${status}` as RunIntegrationEventType;
  return null;
}

/**
 * The integration events of a save that moved the run through `changes` (in order). The payload
 * is what the runs module states about the change: the status it moved into (a retried
 * `run.requires_action` says whether it was an approval or a client tool even once the run has
 * moved on) and the session.
 */
export function runIntegrationEvents(run: Pick<Readonly<RunProps>, 'id' | 'tenantId' | 'sessionId'>, changes: readonly RunStatus[]): IntegrationEvent[] {
  const out: IntegrationEvent[] = [];
  for (const status of changes) {
    const type = runIntegrationEventType(status);
    if (type) out.push({ tenantId: run.tenantId, type, objectId: run.id, payload: { status, session_id: run.sessionId } });
  }
  return out;
}
