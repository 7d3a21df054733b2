import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { UnitOfWork } from '../../../../../common/database/unit-of-work';
import { SessionRepository } from '../../../domain/session.repository';
import { saveWithRetry } from '../save-with-retry';
import { ArchiveSessionCommand } from './archive-session.command';

@CommandHandler(ArchiveSessionCommand)
export class ArchiveSessionHandler implements ICommandHandler<ArchiveSessionCommand> {
  constructor(
    private readonly repo: SessionRepository,
    private readonly uow: UnitOfWork,
  ) {}

  async execute({ principal, sessionId, expectedRevision }: ArchiveSessionCommand) {
    const session = await saveWithRetry(this.repo, this.uow, principal, sessionId, expectedRevision, (s) => s.archive(new Date()));
    return session.snapshot();
  }
}
