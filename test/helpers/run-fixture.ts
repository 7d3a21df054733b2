import { DEFAULT_LIMITS, Run, RunLimits } from '../../src/modules/runs/domain/run.aggregate';
import type { DecideEnv, ToolFacts } from '../../src/modules/runs/domain/run-decider';

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

/** A decider environment for tests: the clock now (or `now`), the given ids in order, these tools. */
export function testEnv(o: { now?: number; ids?: string[]; tools?: Record<string, ToolFacts> } = {}): DecideEnv {
  const ids = [...(o.ids ?? [])];
  let n = 0;
  return {
    now: o.now ?? Date.now(),
    newId: (prefix) => ids.shift() ?? `${prefix}_test_${++n}`,
    tool: (name) => o.tools?.[name] ?? null,
    approvalsAvailable: true,
    approvalTtlMs: 60_000,
  };
}

/** A model turn's end as the executor observes it (no failure). */
export function turnEnded(messageId: string, o: { text?: string; toolCalls?: Array<{ id: string; name: string; arguments?: unknown }> } = {}) {
  return {
    type: 'model_turn_ended' as const,
    message_id: messageId,
    text: o.text ?? '',
    tool_calls: (o.toolCalls ?? []).map((c) => ({ id: c.id, name: c.name, arguments: c.arguments ?? {} })),
    usage: { input_tokens: 0, output_tokens: 0, cached_input_tokens: 0 },
    failure: null,
    aborted: false,
  };
}
