import { MessageRepository } from '../../sessions/domain/message.repository';
import { Run } from '../domain/run.aggregate';
import { Decision, toolResultContent } from '../domain/run-decider';

/**
 * The `tool` message of each call a decision finished (what the model reads next), appended in
 * the decision's commit: for answers that come through the write path (an `ask_user` input, a
 * callback, a timer, a callback timeout). The run's state already has the calls' results.
 */
export async function appendToolResults(messages: MessageRepository, run: Run, d: Decision): Promise<void> {
  const o = run.owner;
  for (const e of d.events) {
    if (e.type !== 'tool_finished') continue;
    const call = run.state.pending.find((p) => p.tool_call_id === e.tool_call_id);
    if (!call) continue;
    const content = toolResultContent(call, e.result);
    await messages.append({ id: e.result_message_id, tenantId: o.tenantId, subjectId: o.subjectId, sessionId: o.sessionId, runId: o.runId, role: 'tool', status: 'completed', content, metadata: {} });
  }
}
