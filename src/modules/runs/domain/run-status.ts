export const RUN_STATUSES = [
  'queued',
  'running',
  'waiting_for_approval',
  'waiting_for_tool',
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

/** Legal moves of CONTRACT section 7. Terminal is final. */
const MOVES: Record<RunStatus, readonly RunStatus[]> = {
  queued: ['running', 'cancelled', 'expired'],
  running: ['waiting_for_approval', 'waiting_for_tool', 'cancelling', 'completed', 'failed', 'terminated'],
  waiting_for_approval: ['running', 'cancelled', 'expired', 'cancelling'],
  waiting_for_tool: ['running', 'cancelled', 'expired', 'cancelling'],
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

export type TerminationReason = 'max_steps' | 'deadline' | 'token_budget' | 'tool_budget' | 'loop_detected';

export type RunErrorCode =
  | 'model_error'
  | 'model_timeout'
  | 'model_refusal'
  | 'tool_failed'
  | 'tool_timeout'
  | 'tool_not_found'
  | 'invalid_tool_arguments'
  | 'outcome_unknown'
  | 'approval_expired'
  | 'internal_error';

export interface RunError {
  code: RunErrorCode;
  message: string;
}
