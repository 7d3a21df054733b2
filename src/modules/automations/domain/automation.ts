import { Cron } from 'croner';
import type { Role } from '../../../common/config/app-config';
import { DomainError, invalidRequest } from '../../../common/errors/domain-error';
import type { ContentPart } from '../../agents/domain/model-provider';

/** When an automation fires (CONTRACT section 17). */
export type AutomationSchedule = { type: 'cron'; expression: string; timezone: string } | { type: 'once'; at: Date };

/** Where each invocation's input goes: a new session of an agent, or an existing session. */
export type AutomationTarget = { type: 'new_session'; agentId: string; metadata: Record<string, string> } | { type: 'session'; sessionId: string };

export type AutomationCreatedBy = { type: 'developer' } | { type: 'agent'; sessionId: string; toolCallId: string };

export type AutomationStatus = 'active' | 'paused' | 'completed';

export interface AutomationProps {
  id: string;
  tenantId: string;
  subjectId: string;
  /** The creator's role: invocations act as the creator (a member's automation reaches only its own sessions). */
  ownerRole: Role;
  name: string;
  schedule: AutomationSchedule;
  target: AutomationTarget;
  input: { role: 'user'; content: ContentPart[] };
  status: AutomationStatus;
  metadata: Record<string, string>;
  createdBy: AutomationCreatedBy;
  /** The next slot to fire; null when paused or completed. */
  nextRunAt: Date | null;
  revision: number;
  createdAt: Date;
  updatedAt: Date;
}

export type InvocationStatus = 'queued' | 'started' | 'skipped' | 'failed';

export interface AutomationInvocation {
  id: string;
  automationId: string;
  tenantId: string;
  source: 'schedule' | 'manual';
  /** The scheduled slot (null for a manual run). */
  slot: Date | null;
  status: InvocationStatus;
  /** `missed`: the slot was older than AUTOMATION_CATCHUP_MS when a node first saw it. */
  skipReason: string | null;
  error: { code: string; message: string } | null;
  runId: string | null;
  sessionId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export function automationNotFound(id: string): DomainError {
  return new DomainError('automation_not_found', 'automation not found', { automation_id: id });
}

export function invocationNotFound(id: string): DomainError {
  return new DomainError('invocation_not_found', 'automation invocation not found', { invocation_id: id });
}

/** Whether `tz` is an IANA time zone this runtime knows. */
export function isTimeZone(tz: string): boolean {
  if (!tz || tz.length > 64) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/**
 * A standard five-field cron expression (minute hour day-of-month month day-of-week) as croner
 * parses it; croner's seconds and year fields are not part of the contract.
 */
export function cronProblem(expression: string): string | null {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5) return 'must be a standard five-field cron expression (minute hour day-of-month month day-of-week)';
  try {
    new Cron(expression, { paused: true });
    return null;
  } catch (err) {
    return `is not a valid cron expression: ${(err as Error).message}`;
  }
}

/** Checks a schedule; `field` prefixes the error's field names (`schedule`, or the SDK's top level). */
export function assertSchedule(s: AutomationSchedule, now: Date, fields: { expression: string; timezone: string; at: string }): void {
  if (s.type === 'cron') {
    const problem = cronProblem(s.expression);
    if (problem) throw invalidRequest(`${fields.expression} ${problem}`, [{ field: fields.expression, message: problem }]);
    if (!isTimeZone(s.timezone)) throw invalidRequest(`${fields.timezone} must be an IANA time zone such as Europe/Berlin`, [{ field: fields.timezone, message: 'must be an IANA time zone such as Europe/Berlin' }]);
    // A valid expression that matches no date (February 31st): it would never fire.
    if (firstSlot(s, now) === null) throw invalidRequest(`${fields.expression} never fires (no date matches it)`, [{ field: fields.expression, message: 'never fires (no date matches it)' }]);
  } else if (!(s.at.getTime() > now.getTime())) {
    throw invalidRequest(`${fields.at} must be in the future`, [{ field: fields.at, message: 'must be in the future' }]);
  }
}

/** The first slot after `now`; null when there is none (croner may also search until its stack runs out: April 31st). */
function firstSlot(s: AutomationSchedule, now: Date): Date | null {
  try {
    return nextSlot(s, now);
  } catch {
    return null;
  }
}

/** Which cap a new automation would pass: a tenant's or its owner's (AUTOMATIONS_MAX_PER_TENANT / _PER_MEMBER). */
export type AutomationCap = { scope: 'tenant' | 'member'; limit: number };

export function automationLimitReached(cap: AutomationCap): DomainError {
  const whose = cap.scope === 'tenant' ? 'this tenant has' : 'you have';
  return new DomainError('automation_limit_reached', `${whose} ${cap.limit} automations (active or paused), the most allowed; delete one first`, { scope: cap.scope, limit: cap.limit });
}

/**
 * The first slot strictly after `after`. Cron: croner's next run in the time zone; DST as croner
 * documents it: a local time that does not exist (the spring-forward gap) fires at the first
 * existing minute after it, a local time that occurs twice (fall back) fires once, at its first
 * occurrence. Once: `at` if it is after `after`, else none.
 */
export function nextSlot(s: AutomationSchedule, after: Date): Date | null {
  if (s.type === 'once') return s.at.getTime() > after.getTime() ? s.at : null;
  return new Cron(s.expression, { timezone: s.timezone, paused: true }).nextRun(after) ?? null;
}

/**
 * What a node does with an automation whose `next_run_at` (`due`) is at or before `now`: the newest slot
 * that is due fires if it is younger than `catchupMs` (else it is skipped); older slots
 * missed while no node was up are recorded as one skipped invocation (`missedBefore`, with their
 * count, null when there were too many to count). `next` is the slot after the newest due one (null: the schedule is over).
 */
export function dueSlots(
  s: AutomationSchedule,
  due: Date,
  now: Date,
  catchupMs: number,
): { fire: Date | null; skip: Date | null; missedBefore: { slot: Date; count: number | null } | null; next: Date | null } {
  let newest = due;
  let count: number | null = 0;
  let next = nextSlot(s, newest);
  for (let i = 0; next && next.getTime() <= now.getTime() && i < MISSED_COUNTED; i++) {
    count++;
    newest = next;
    next = nextSlot(s, newest);
  }
  if (next && next.getTime() <= now.getTime() && s.type === 'cron') {
    // More missed slots than are worth counting (a minute cron down for days): jump to the newest one.
    const before = new Cron(s.expression, { timezone: s.timezone, paused: true }).previousRuns(2, new Date(now.getTime() + 1000));
    newest = before.find((d) => d.getTime() <= now.getTime()) ?? newest;
    next = nextSlot(s, newest);
    count = null;
  }
  const young = now.getTime() - newest.getTime() <= catchupMs;
  return {
    fire: young ? newest : null,
    skip: young ? null : newest,
    missedBefore: count === null || count > 0 ? { slot: due, count } : null,
    next,
  };
}

/** Missed slots counted one by one before `dueSlots` jumps to the newest. */
const MISSED_COUNTED = 1000;
