import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { UnitOfWork } from '../../../../../common/database/unit-of-work';
import { sessionNotFound } from '../../../domain/session.errors';
import { SessionRepository } from '../../../domain/session.repository';
import { loadOwnedSession } from '../../load-owned-session';
import { DeleteSessionCommand } from './delete-session.command';
import { KnownSessions } from '../../known-sessions';

/** Deletes the session; its runs, messages and events go with it (foreign keys cascade). */
@CommandHandler(DeleteSessionCommand)
export class DeleteSessionHandler implements ICommandHandler<DeleteSessionCommand> {
  constructor(
    private readonly repo: SessionRepository,
    private readonly uow: UnitOfWork,
    private readonly known: KnownSessions,
  ) {}

  async execute({ principal, sessionId }: DeleteSessionCommand): Promise<void> {
    await loadOwnedSession(this.repo, principal, sessionId);
    const deleted = await this.uow.run(() => this.repo.delete(sessionId));
    this.known.forget(sessionId);
    if (!deleted) throw sessionNotFound(sessionId);
  }
}
