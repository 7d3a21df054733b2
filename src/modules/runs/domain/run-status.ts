export const RUN_STATUSES = [
  'queued',
  'running',
  'waiting_for_approval',
  'waiting_for_tool',
  'waiting_for_input',
  'waiting_for_callback',
  'waiting_for_timer',
  'waiting_for_quota',
  'waiting_for_subagents',
  'cancelling',
  'completed',
  'failed',
  'cancelled',
  'expired',
  'terminated',
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export const TERMINAL_STATUSES: readonly RunStatus[] = ['completed', 'failed', 'cancelled', 'expired', 'terminated'];
export const ACTIVE_STATUSES: readonly RunStatus[] = RUN_STATUSES.filter((s) => !TERMINAL_STATUSES.includes(s));

export function isTerminal(s: RunStatus): boolean {
  return TERMINAL_STATUSES.includes(s);
}

/** The statuses of a paused run (CONTRACT sections 7 and 17): it executes nothing and holds no lease. */
export const WAITING_STATUSES = ['waiting_for_approval', 'waiting_for_tool', 'waiting_for_input', 'waiting_for_callback', 'waiting_for_timer', 'waiting_for_quota', 'waiting_for_subagents'] as const;
export type WaitingStatus = (typeof WAITING_STATUSES)[number];

export function isWaiting(s: RunStatus): s is WaitingStatus {
  return (WAITING_STATUSES as readonly RunStatus[]).includes(s);
}

const FROM_WAITING: readonly RunStatus[] = ['running', 'cancelled', 'expired', 'cancelling'];

/** Legal moves of CONTRACT section 7. Terminal is final. */
const MOVES: Record<RunStatus, readonly RunStatus[]> = {
  queued: ['running', 'cancelled', 'expired'],
  running: [...WAITING_STATUSES, 'cancelling', 'completed', 'failed', 'terminated'],
  waiting_for_approval: FROM_WAITING,
  waiting_for_tool: FROM_WAITING,
  waiting_for_input: FROM_WAITING,
  waiting_for_callback: FROM_WAITING,
  waiting_for_timer: FROM_WAITING,
  waiting_for_quota: FROM_WAITING,
  waiting_for_subagents: FROM_WAITING,
  cancelling: ['cancelled'],
  completed: [],
  failed: [],
  cancelled: [],
  expired: [],
  terminated: [],
};

export function canMove(from: RunStatus, to: RunStatus): boolean {
  return MOVES[from].includes(to);
}

export type TerminationReason = 'max_steps' | 'deadline' | 'token_budget' | 'tool_budget' | 'cost_budget' | 'loop_detected';

export type RunErrorCode =
  | 'model_error'
  | 'model_timeout'
  | 'model_refusal'
  | 'model_rate_limited'
  | 'context_length_exceeded'
  | 'model_auth_failed'
  | 'tool_failed'
  | 'tool_timeout'
  | 'tool_not_found'
  | 'invalid_tool_arguments'
  | 'outcome_unknown'
  | 'approval_expired'
  | 'input_expired'
  | 'access_revoked'
  | 'internal_error';

export interface RunError {
  code: RunErrorCode;
  message: string;
}
