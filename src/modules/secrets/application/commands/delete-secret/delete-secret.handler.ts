import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { SecretRepository } from '../../../domain/secret.repository';
import { secretNotFound } from '../../secret-not-found';
import { DeleteSecretCommand } from './delete-secret.command';

@CommandHandler(DeleteSecretCommand)
export class DeleteSecretHandler implements ICommandHandler<DeleteSecretCommand> {
  constructor(private readonly repo: SecretRepository) {}

  async execute(cmd: DeleteSecretCommand): Promise<{ version: number }> {
    const version = await this.repo.delete(cmd.principal.tenantId, cmd.name);
    if (version === null) throw secretNotFound(cmd.name);
    return { version };
  }
}
