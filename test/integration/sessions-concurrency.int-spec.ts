import { CommandBus } from '@nestjs/cqrs';
import { DataSource } from 'typeorm';
import { Principal } from '../../src/common/auth/principal';
import { UnitOfWork } from '../../src/common/database/unit-of-work';
import { ConcurrencyConflict, DomainError } from '../../src/common/errors/domain-error';
import { CreateSessionCommand } from '../../src/modules/sessions/application/commands/create-session/create-session.command';
import { UpdateSessionCommand } from '../../src/modules/sessions/application/commands/update-session/update-session.command';
import { ArchiveSessionCommand } from '../../src/modules/sessions/application/commands/archive-session/archive-session.command';
import { SessionRepository } from '../../src/modules/sessions/domain/session.repository';
import { startTestApp, TestApp } from '../helpers/test-app';

const member: Principal = { tenantId: 'tenant_a', subjectId: 'user_a1', role: 'member', keyId: 'key_test' };

describe('sessions: optimistic concurrency against the database', () => {
  let t: TestApp;
  let repo: SessionRepository;
  let uow: UnitOfWork;
  let commands: CommandBus;
  let db: DataSource;

  beforeAll(async () => {
    t = await startTestApp();
    repo = t.app.get(SessionRepository);
    uow = t.app.get(UnitOfWork);
    commands = t.app.get(CommandBus);
    db = t.app.get(DataSource);
  });
  afterAll(async () => {
    await t.close();
  });

  async function createSession(title = 'start'): Promise<string> {
    const s = await commands.execute(new CreateSessionCommand(member, { title }));
    return s.id;
  }

  async function storedRevision(id: string): Promise<number> {
    const rows: Array<{ revision: number }> = await db.query(`SELECT revision FROM sessions WHERE id = $1`, [id]);
    return Number(rows[0].revision);
  }

  it('repository: two writers loaded at the same revision -> exactly one save wins, the other gets ConcurrencyConflict', async () => {
    const id = await createSession();
    const a = (await repo.findById(id))!;
    const b = (await repo.findById(id))!;
    expect(a.revision).toBe(1);
    expect(b.revision).toBe(1);
    a.update({ title: 'from A' }, new Date());
    b.update({ title: 'from B' }, new Date());

    const results = await Promise.allSettled([uow.run(() => repo.save(a)), uow.run(() => repo.save(b))]);

    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(lost[0].reason).toBeInstanceOf(ConcurrencyConflict);
    expect(lost[0].reason).toMatchObject({ resource: 'session', id, expectedVersion: 1 });

    const stored = (await repo.findById(id))!;
    expect(stored.revision).toBe(2);
    const winnerTitle = results[0].status === 'fulfilled' ? 'from A' : 'from B';
    expect(stored.snapshot().title).toBe(winnerTitle);
  });

  it('repository: a save from a stale load fails even after the winner committed', async () => {
    const id = await createSession();
    const stale = (await repo.findById(id))!;
    const fresh = (await repo.findById(id))!;
    fresh.archive(new Date());
    await uow.run(() => repo.save(fresh));
    stale.update({ title: 'late' }, new Date());
    await expect(uow.run(() => repo.save(stale))).rejects.toBeInstanceOf(ConcurrencyConflict);
    await expect(storedRevision(id)).resolves.toBe(2);
    expect((await repo.findById(id))!.snapshot().title).toBe('start');
  });

  it('repository: a rolled-back transaction leaves the row untouched', async () => {
    const id = await createSession();
    const s = (await repo.findById(id))!;
    s.update({ title: 'rolled back' }, new Date());
    await expect(
      uow.run(async () => {
        await repo.save(s);
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    await expect(storedRevision(id)).resolves.toBe(1);
    expect((await repo.findById(id))!.snapshot().title).toBe('start');
  });

  it('command bus with expected_revision: exactly one of 10 concurrent updates wins, the rest are session_conflict with details.current_revision', async () => {
    const id = await createSession();
    const n = 10;
    const results = await Promise.allSettled(
      Array.from({ length: n }, (_, i) => commands.execute(new UpdateSessionCommand(member, id, { title: `writer ${i}` }, 1))),
    );

    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(n - 1);
    for (const r of lost) {
      expect(r.reason).toBeInstanceOf(DomainError);
      expect((r.reason as DomainError).code).toBe('session_conflict');
      expect((r.reason as DomainError).details).toMatchObject({ session_id: id, current_revision: 2, expected_revision: 1 });
    }
    await expect(storedRevision(id)).resolves.toBe(2);
  });

  it('command bus without expected_revision: concurrent updates are all applied, one revision each', async () => {
    const id = await createSession();
    const n = 5;
    const results = await Promise.allSettled(
      Array.from({ length: n }, (_, i) => commands.execute(new UpdateSessionCommand(member, id, { metadata: { writer: String(i) } }))),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(n);
    await expect(storedRevision(id)).resolves.toBe(1 + n);
  });

  it('command bus: concurrent archive with expected_revision -> one archive, the others conflict', async () => {
    const id = await createSession();
    const results = await Promise.allSettled([0, 1, 2].map(() => commands.execute(new ArchiveSessionCommand(member, id, 1))));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(lost.map((r) => (r.reason as DomainError).code)).toEqual(['session_conflict', 'session_conflict']);
    const rows: Array<{ status: string; revision: number }> = await db.query(`SELECT status, revision FROM sessions WHERE id = $1`, [id]);
    expect(rows[0]).toEqual({ status: 'archived', revision: 2 });
  });
});
