import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { UnitOfWork } from '../../../../../common/database/unit-of-work';
import { ConcurrencyConflict } from '../../../../../common/errors/domain-error';
import { AttachmentRepository } from '../../../domain/attachment.repository';
import { BlobStore } from '../../../domain/blob-store';
import { loadOwnedAttachment } from '../../load-owned-attachment';
import { DeleteAttachmentCommand } from './delete-attachment.command';

/** Status `deleted` and the content removed, in one transaction; afterwards the id answers 404. */
@CommandHandler(DeleteAttachmentCommand)
export class DeleteAttachmentHandler implements ICommandHandler<DeleteAttachmentCommand> {
  constructor(
    private readonly repo: AttachmentRepository,
    private readonly blobs: BlobStore,
    private readonly uow: UnitOfWork,
  ) {}

  async execute(cmd: DeleteAttachmentCommand): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.uow.run(async () => {
          const a = await loadOwnedAttachment(this.repo, cmd.principal, cmd.id);
          a.delete(new Date());
          await this.repo.save(a);
          await this.blobs.delete(a.storageKey);
        });
        return;
      } catch (err) {
        // A concurrent move (the sweeper expiring it): read again and decide again.
        if (!(err instanceof ConcurrencyConflict) || attempt >= 2) throw err;
      }
    }
  }
}
