import { UnitOfWork } from '../../src/common/database/unit-of-work';
import { newId } from '../../src/common/ids/ids';
import { EventStore, EventStreamOwner, NewRunEvent, StoredRunEvent } from '../../src/modules/events/domain/run-event';
import { TestApp } from './test-app';

/** Creates a session through the API as `key`; returns its id and owner. */
export async function createSession(t: TestApp, key: string): Promise<{ id: string; tenantId: string; subjectId: string }> {
  const res = await t.call(key, 'POST', '/v1/sessions', { title: 'events test' });
  if (res.status !== 201) throw new Error(`create session: ${res.status} ${res.text}`);
  return { id: res.body.id, tenantId: res.body.tenant_id, subjectId: res.body.subject_id };
}

/**
 * Inserts a minimal run row directly (the runs API is not needed to test event streams). It is
 * leased to a fake node so that no run worker picks it up (tests also start apps with
 * WORKER_ENABLED=false: the events written here come from the test alone).
 */
export async function insertRun(t: TestApp, session: { id: string; tenantId: string; subjectId: string }, status = 'running'): Promise<EventStreamOwner> {
  const runId = newId('run');
  const uow = t.app.get(UnitOfWork);
  await uow.manager.query(
    `INSERT INTO runs (id, tenant_id, subject_id, session_id, agent_id, agent_version, model, status, user_message_id,
                       usage, limits, version, lease_owner, lease_expires_at, created_at, updated_at, queue_expires_at)
     VALUES ($1, $2, $3, $4, 'support_agent', '1', 'scripted', $5, $6,
             '{"input_tokens":0,"output_tokens":0,"tool_calls":0,"model_calls":0}'::jsonb,
             '{"max_steps":10,"timeout_ms":300000,"max_total_tokens":null,"max_tool_calls":50}'::jsonb,
             1, 'events-test', now() + interval '1 day', now(), now(), now() + interval '1 hour')`,
    [runId, session.tenantId, session.subjectId, session.id, status, newId('msg')],
  );
  return { tenantId: session.tenantId, subjectId: session.subjectId, sessionId: session.id, runId };
}

/** Environment for apps of event tests: no run worker. */
export const NO_WORKER = { WORKER_ENABLED: 'false' };

export async function setRunStatus(t: TestApp, runId: string, status: string): Promise<void> {
  await t.app.get(UnitOfWork).manager.query(`UPDATE runs SET status = $2 WHERE id = $1`, [runId, status]);
}

/** Appends events through the app's EventStore in one transaction (as the agent loop does). */
export async function append(t: TestApp, owner: EventStreamOwner, events: NewRunEvent[]): Promise<StoredRunEvent[]> {
  const uow = t.app.get(UnitOfWork);
  const store = t.app.get(EventStore);
  return uow.run(() => store.append(owner, events));
}

export function deltas(n: number, messageId = 'msg_x'): NewRunEvent[] {
  return Array.from({ length: n }, (_, i) => ({ type: 'message.delta' as const, data: { message_id: messageId, content_index: 0, delta: `d${i}` } }));
}

export const FINISHED: NewRunEvent = {
  type: 'run.finished',
  data: { status: 'completed', final_message_id: null, termination_reason: null, error: null, usage: {} },
};
