import { DomainError } from '../../../common/errors/domain-error';
import { Session, SessionProps } from './session.aggregate';

const T0 = new Date('2026-01-01T00:00:00.000Z');
const T1 = new Date('2026-01-01T00:01:00.000Z');
const T2 = new Date('2026-01-01T00:02:00.000Z');

function givenNewSession(): Session {
  return Session.create({
    id: 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B',
    tenantId: 'tenant_a',
    subjectId: 'user_a1',
    agent: { id: 'support_agent', version: '1', model: 'scripted' },
    title: 'first',
    metadata: { customer: 'acme' },
    now: T0,
  });
}

function givenStoredSession(overrides: Partial<SessionProps> = {}): Session {
  return Session.restore({ ...givenNewSession().snapshot(), revision: 3, ...overrides });
}

function caught(fn: () => void): DomainError {
  try {
    fn();
  } catch (err) {
    if (err instanceof DomainError) return err;
    throw err;
  }
  throw new Error('expected a DomainError');
}

describe('Session aggregate', () => {
  describe('create', () => {
    it('starts active at revision 1, pins the agent and records session.created', () => {
      const s = givenNewSession();
      const snap = s.snapshot();
      expect(snap.revision).toBe(1);
      expect(snap.status).toBe('active');
      expect(snap.agent).toEqual({ id: 'support_agent', version: '1', model: 'scripted' });
      expect(snap.activeRunId).toBeNull();
      expect(snap.messageSeq).toBe(0);
      expect(snap.createdAt).toEqual(T0);
      expect(snap.updatedAt).toEqual(T0);
      expect(snap.lastActiveAt).toEqual(T0);
      expect(s.isNew).toBe(true);
      expect(s.expectedRevision).toBe(0);
      expect(s.pullEvents()).toEqual([{ type: 'session.created', sessionId: snap.id }]);
      expect(s.pullEvents()).toEqual([]);
    });

    it('copies its inputs, so later changes to them do not leak in', () => {
      const metadata = { customer: 'acme' };
      const agent = { id: 'support_agent', version: '1', model: 'scripted' };
      const s = Session.create({ id: 'sess_x', tenantId: 't', subjectId: 'u', agent, title: null, metadata, now: T0 });
      metadata.customer = 'changed';
      agent.model = 'changed';
      expect(s.snapshot().metadata).toEqual({ customer: 'acme' });
      expect(s.snapshot().agent.model).toBe('scripted');
    });
  });

  describe('update', () => {
    it('bumps the revision by exactly 1 when one field changes', () => {
      const s = givenStoredSession();
      s.update({ title: 'renamed' }, T1);
      expect(s.revision).toBe(4);
      expect(s.expectedRevision).toBe(3);
      expect(s.isDirty).toBe(true);
      expect(s.snapshot().title).toBe('renamed');
      expect(s.snapshot().updatedAt).toEqual(T1);
      expect(s.pullEvents()).toEqual([{ type: 'session.updated', sessionId: s.id, changes: ['title'] }]);
    });

    it('bumps the revision by exactly 1 however many fields change at once', () => {
      const s = givenStoredSession();
      s.update({ title: 'renamed', metadata: { a: 'b' }, model: 'gpt-x' }, T1);
      expect(s.revision).toBe(4);
      expect(s.pullEvents()).toEqual([{ type: 'session.updated', sessionId: s.id, changes: ['title', 'metadata', 'agent.model'] }]);
      expect(s.snapshot().agent).toEqual({ id: 'support_agent', version: '1', model: 'gpt-x' });
    });

    it('bumps by exactly 1 even over several edits within one command (one committed change)', () => {
      const s = givenStoredSession();
      s.update({ title: 'one' }, T1);
      s.update({ title: 'two' }, T2);
      s.archive(T2);
      expect(s.revision).toBe(4);
      expect(s.snapshot().title).toBe('two');
    });

    it('keeps the revision, the timestamps and records nothing on a no-op update', () => {
      const s = givenStoredSession();
      s.update({ title: 'first', metadata: { customer: 'acme' }, model: 'scripted' }, T1);
      s.update({}, T1);
      expect(s.revision).toBe(3);
      expect(s.isDirty).toBe(false);
      expect(s.snapshot().updatedAt).toEqual(T0);
      expect(s.pullEvents()).toEqual([]);
    });

    it('treats a null title as a change from a set title', () => {
      const s = givenStoredSession();
      s.update({ title: null }, T1);
      expect(s.snapshot().title).toBeNull();
      expect(s.revision).toBe(4);
    });

    it('does not move last_active_at on title or metadata edits', () => {
      const s = givenStoredSession();
      s.update({ title: 'x', metadata: {} }, T1);
      expect(s.snapshot().lastActiveAt).toEqual(T0);
    });
  });

  describe('archive', () => {
    it('archives an active session, bumps the revision and records session.archived', () => {
      const s = givenStoredSession();
      s.archive(T1);
      expect(s.status).toBe('archived');
      expect(s.revision).toBe(4);
      expect(s.snapshot().updatedAt).toEqual(T1);
      expect(s.pullEvents()).toEqual([{ type: 'session.archived', sessionId: s.id }]);
    });

    it('archiving an archived session changes nothing', () => {
      const s = givenStoredSession({ status: 'archived' });
      s.archive(T1);
      expect(s.status).toBe('archived');
      expect(s.revision).toBe(3);
      expect(s.isDirty).toBe(false);
      expect(s.pullEvents()).toEqual([]);
    });

    it('archiving twice in one command bumps once and records one event', () => {
      const s = givenStoredSession();
      s.archive(T1);
      s.archive(T2);
      expect(s.revision).toBe(4);
      expect(s.pullEvents()).toHaveLength(1);
    });
  });

  describe('assertRevision', () => {
    it('accepts undefined (no precondition) and the current revision', () => {
      const s = givenStoredSession();
      expect(() => s.assertRevision(undefined)).not.toThrow();
      expect(() => s.assertRevision(3)).not.toThrow();
    });

    it.each([0, 2, 4, 99])('rejects expected_revision %i with session_conflict and the current revision in details', (expected) => {
      const s = givenStoredSession();
      const err = caught(() => s.assertRevision(expected));
      expect(err.code).toBe('session_conflict');
      expect(err.details).toEqual({ session_id: s.id, current_revision: 3, expected_revision: expected });
    });
  });

  describe('assertAcceptsRuns', () => {
    it('accepts runs while active', () => {
      expect(() => givenStoredSession().assertAcceptsRuns()).not.toThrow();
    });

    it('rejects runs once archived with session_archived', () => {
      const s = givenStoredSession();
      s.archive(T1);
      const err = caught(() => s.assertAcceptsRuns());
      expect(err.code).toBe('session_archived');
      expect(err.details).toEqual({ session_id: s.id });
    });
  });

  describe('restore and snapshot', () => {
    it('restores clean at the stored revision, and snapshots are copies', () => {
      const s = givenStoredSession();
      expect(s.isNew).toBe(false);
      expect(s.isDirty).toBe(false);
      expect(s.expectedRevision).toBe(3);
      const snap = s.snapshot() as SessionProps;
      snap.metadata.injected = 'x';
      snap.agent.model = 'x';
      expect(s.snapshot().metadata).toEqual({ customer: 'acme' });
      expect(s.snapshot().agent.model).toBe('scripted');
    });
  });
});
