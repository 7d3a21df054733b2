import { Principal } from '../../../common/auth/principal';
import { Session } from '../domain/session.aggregate';
import { SessionRepository } from '../domain/session.repository';
import { KNOWN_SESSIONS_MAX, KnownSessions } from './known-sessions';

const owner: Principal = { tenantId: 't1', subjectId: 'u1', role: 'member', keyId: 'k1' } as Principal;
const other: Principal = { tenantId: 't1', subjectId: 'u2', role: 'member', keyId: 'k2' } as Principal;
const admin: Principal = { tenantId: 't1', subjectId: 'a', role: 'admin', keyId: 'k3' } as Principal;

function session(id: string): Session {
  return Session.create({ id, tenantId: 't1', subjectId: 'u1', agent: { id: 'assistant', version: '1', model: 'scripted' }, title: null, metadata: {}, now: new Date() });
}

function repoWith(sessions: Session[]) {
  const reads: string[] = [];
  const repo = {
    findById: async (id: string) => {
      reads.push(id);
      return sessions.find((s) => s.id === id) ?? null;
    },
  } as unknown as SessionRepository;
  return { repo, reads };
}

describe('KnownSessions', () => {
  it('reads a session it does not know once, then answers from memory; the loaded session only on the read', async () => {
    const s = session('sess_a');
    const { repo, reads } = repoWith([s]);
    const known = new KnownSessions(repo);
    const first = await known.owned(owner, 'sess_a');
    expect(first.loaded).toBe(s);
    expect(first.facts).toEqual({ id: 'sess_a', tenantId: 't1', subjectId: 'u1', agent: { id: 'assistant', version: '1', model: 'scripted' } });
    const second = await known.owned(owner, 'sess_a');
    expect(second.loaded).toBeNull();
    expect(second.facts).toEqual(first.facts);
    expect(reads).toEqual(['sess_a']);
  });

  it('answers 404 session_not_found to a caller who may not see it, from memory too, and for a missing one', async () => {
    const s = session('sess_b');
    const { repo } = repoWith([s]);
    const known = new KnownSessions(repo);
    known.remember(s);
    await expect(known.owned(other, 'sess_b')).rejects.toMatchObject({ code: 'session_not_found' });
    await expect(known.owned(admin, 'sess_b')).resolves.toMatchObject({ loaded: null });
    await expect(known.owned(owner, 'sess_missing')).rejects.toMatchObject({ code: 'session_not_found' });
  });

  it('forgets a deleted session and the least recently remembered beyond its bound', async () => {
    const { repo, reads } = repoWith([]);
    const known = new KnownSessions(repo);
    known.remember(session('sess_gone'));
    known.forget('sess_gone');
    await expect(known.owned(owner, 'sess_gone')).rejects.toMatchObject({ code: 'session_not_found' });
    expect(reads).toEqual(['sess_gone']);
    for (let i = 0; i <= KNOWN_SESSIONS_MAX; i++) known.remember(session(`sess_${i}`));
    await expect(known.owned(owner, 'sess_0')).rejects.toMatchObject({ code: 'session_not_found' }); // evicted: read, not found
    await expect(known.owned(owner, `sess_${KNOWN_SESSIONS_MAX}`)).resolves.toMatchObject({ loaded: null });
  });
});
