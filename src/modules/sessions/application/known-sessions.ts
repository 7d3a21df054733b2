import { Injectable } from '@nestjs/common';
import { canSee, Principal } from '../../../common/auth/principal';
import { Session } from '../domain/session.aggregate';
import { sessionNotFound } from '../domain/session.errors';
import { SessionRepository } from '../domain/session.repository';

/** What never changes about a session once created: its owner and its pinned agent. */
export interface SessionFacts {
  id: string;
  tenantId: string;
  subjectId: string;
  agent: { id: string; version: string; model: string };
}

/** Sessions remembered per node (the least recently used beyond it are forgotten). */
export const KNOWN_SESSIONS_MAX = 10_000;

/**
 * The immutable facts of the sessions this node created or read lately, so that starting a run
 * does not read its session first (POST /runs: one statement instead of two). Only facts that
 * never change are kept; whatever can change (the session still exists, is not archived, its
 * revision) is checked by the statement that appends the run's input, which locks the row.
 * A node that does not know a session reads it, as before.
 */
@Injectable()
export class KnownSessions {
  private readonly facts = new Map<string, SessionFacts>();

  constructor(private readonly sessions: SessionRepository) {}

  remember(session: Session): void {
    const s = session.snapshot();
    this.facts.delete(s.id);
    this.facts.set(s.id, { id: s.id, tenantId: s.tenantId, subjectId: s.subjectId, agent: { ...s.agent } });
    if (this.facts.size > KNOWN_SESSIONS_MAX) this.facts.delete(this.facts.keys().next().value!);
  }

  forget(id: string): void {
    this.facts.delete(id);
  }

  /**
   * The facts of a session the caller may see (404 `session_not_found` otherwise, as for a missing
   * one), and the session itself when it had to be read (its state is then current: the caller
   * may check it before writing).
   */
  async owned(principal: Principal, id: string): Promise<{ facts: SessionFacts; loaded: Session | null }> {
    const known = this.facts.get(id);
    if (known) {
      if (!canSee(principal, known)) throw sessionNotFound(id);
      return { facts: known, loaded: null };
    }
    const session = await this.sessions.findById(id);
    if (!session || !canSee(principal, session)) throw sessionNotFound(id);
    this.remember(session);
    return { facts: this.facts.get(id)!, loaded: session };
  }
}
