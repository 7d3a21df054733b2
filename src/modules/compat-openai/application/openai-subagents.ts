import { Injectable } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { Principal } from '../../../common/auth/principal';
import { DomainError } from '../../../common/errors/domain-error';
import { SessionHistory } from '../../compat-shared/session-history';
import { SessionInputs } from '../../compat-shared/session-inputs';
import { ListSubagentsQuery } from '../../sessions/application/queries/list-subagents/list-subagents.query';
import type { SessionProps } from '../../sessions/domain/session.aggregate';
import { callingAgentIdOf, toOpenAiSubagent } from '../domain/openai-resources';
import type { OpenAiSubagent, SubagentNaming } from '../domain/openai-shapes';

/** How deep a subagent may sit below the session it is looked up from (a subagent's subagent's ...). */
const MAX_DEPTH = 8;
/** The subagents `subagents.list` reads for one session, nested ones included. */
const MAX_LISTED = 1000;
const PAGE = 100;

/**
 * The SDK's `sessions.subagents` over the native child sessions (CONTRACT 16), read through the
 * sessions module's queries (`GET /v1/sessions/{id}/subagents`, one page at a time) - never its
 * tables. A session's subagents are its child sessions and theirs (nested), as the SDK lists them.
 */
@Injectable()
export class OpenAiSubagents {
  constructor(
    private readonly queries: QueryBus,
    private readonly inputs: SessionInputs,
    private readonly history: SessionHistory,
  ) {}

  /** The direct children of a session the caller may see, oldest first. */
  async children(principal: Principal, sessionId: string, max = MAX_LISTED): Promise<Array<Readonly<SessionProps>>> {
    const out: Array<Readonly<SessionProps>> = [];
    for (let after: string | undefined; out.length < max; ) {
      const { items, hasMore } = await this.queries.execute(new ListSubagentsQuery(principal, sessionId, { after, limit: PAGE, order: 'asc' }));
      out.push(...items);
      if (!hasMore || items.length === 0) break;
      after = items[items.length - 1].id;
    }
    return out.slice(0, max);
  }

  /** Every subagent of `root` (children, then theirs, up to MAX_DEPTH levels and MAX_LISTED in all), with its parent session. */
  async descendants(principal: Principal, root: Readonly<SessionProps>): Promise<Array<{ child: Readonly<SessionProps>; parent: Readonly<SessionProps> }>> {
    const out: Array<{ child: Readonly<SessionProps>; parent: Readonly<SessionProps> }> = [];
    let level: Array<Readonly<SessionProps>> = [root];
    for (let depth = 0; depth < MAX_DEPTH && level.length > 0 && out.length < MAX_LISTED; depth++) {
      const next: Array<Readonly<SessionProps>> = [];
      for (const parent of level) {
        if (out.length >= MAX_LISTED) break;
        for (const child of await this.children(principal, parent.id, MAX_LISTED - out.length)) {
          out.push({ child, parent });
          next.push(child);
        }
      }
      level = next;
    }
    return out;
  }

  /**
   * Subagent `subagentId` of session `rootId` (at any depth) and its parent session, or 404
   * `session_not_found` (also for a session that is not one of its subagents).
   */
  async subagentOf(principal: Principal, rootId: string, subagentId: string): Promise<{ child: Readonly<SessionProps>; parent: Readonly<SessionProps> }> {
    const notFound = () => new DomainError('session_not_found', `no subagent ${subagentId} in session ${rootId}`, { session_id: rootId, subagent_id: subagentId });
    await this.inputs.session(principal, rootId); // the session first: 404 for it
    if (!/^sess_[0-9A-Za-z]{1,64}$/.test(subagentId)) throw notFound();
    let child: Readonly<SessionProps>;
    try {
      child = await this.inputs.session(principal, subagentId);
    } catch (err) {
      if (err instanceof DomainError && err.code === 'session_not_found') throw notFound();
      throw err;
    }
    if (!child.parent) throw notFound();
    const parent = await this.inputs.session(principal, child.parent.sessionId);
    for (let at: Readonly<SessionProps> | null = parent, depth = 0; at && depth < MAX_DEPTH; depth++) {
      if (at.id === rootId) return { child, parent };
      at = at.parent ? await this.inputs.session(principal, at.parent.sessionId) : null;
    }
    throw notFound();
  }

  /** The top-level session a session belongs to (itself when it is no subagent). */
  async rootOf(principal: Principal, s: Readonly<SessionProps>): Promise<Readonly<SessionProps>> {
    let at = s;
    for (let depth = 0; depth < MAX_DEPTH && at.parent; depth++) at = await this.inputs.session(principal, at.parent.sessionId);
    return at;
  }

  /** A subagent as the SDK's `Subagent`, its task read from its first message. */
  async view(principal: Principal, child: Readonly<SessionProps>, parent: Readonly<SessionProps>, rootId: string): Promise<OpenAiSubagent> {
    return toOpenAiSubagent(child, parent, rootId, await this.task(principal, child.id));
  }

  /** A subagent's task: the text of its session's first message (null when it has none). */
  async task(principal: Principal, childId: string): Promise<string | null> {
    const { items } = await this.history.page(principal, childId, { limit: 1, order: 'asc' });
    const first = items[0];
    if (!first) return null;
    return first.content
      .filter((p) => p.type === 'text')
      .map((p) => (p as { text: string }).text)
      .join('');
  }

  /** How the subagent items of a session's history name agents (its children by id or, per turn, by name). */
  async naming(principal: Principal, session: Readonly<SessionProps>): Promise<SubagentNaming> {
    return namingOf(callingAgentIdOf(session), await this.children(principal, session.id));
  }
}

/** The naming of subagent items over a session's known children (by id, or by name within the turn that created them). */
export function namingOf(sender: string, children: ReadonlyArray<Pick<SessionProps, 'id' | 'parent'>>): SubagentNaming {
  const byTurnAndName = new Map<string, string>();
  const byName = new Map<string, string>();
  const byTurn = new Map<string, string[]>();
  for (const c of children) {
    if (!c.parent) continue;
    byTurnAndName.set(`${c.parent.runId}/${c.parent.name}`, c.id);
    byName.set(c.parent.name, c.id);
    byTurn.set(c.parent.runId, [...(byTurn.get(c.parent.runId) ?? []), c.id]);
  }
  return {
    sender,
    resolve: (turnId, ref) => (ref.startsWith('sess_') ? ref : (byTurnAndName.get(`${turnId}/${ref}`) ?? byName.get(ref) ?? ref)),
    createdBy: (turnId) => byTurn.get(turnId) ?? [],
  };
}
