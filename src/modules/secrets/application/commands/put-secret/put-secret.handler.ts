import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { ConcurrencyConflict } from '../../../../../common/errors/domain-error';
import { SecretMetadata } from '../../../domain/secret';
import { SecretCipher } from '../../../domain/secret-cipher';
import { SecretRepository } from '../../../domain/secret.repository';
import { PutSecretCommand } from './put-secret.command';

/** Writes racing on one name: each re-reads the last version and seals for the next (the version is in the AAD). */
const ATTEMPTS = 5;

@CommandHandler(PutSecretCommand)
export class PutSecretHandler implements ICommandHandler<PutSecretCommand> {
  constructor(
    private readonly repo: SecretRepository,
    private readonly cipher: SecretCipher,
  ) {}

  async execute(cmd: PutSecretCommand): Promise<SecretMetadata> {
    const tenantId = cmd.principal.tenantId;
    let last = 0;
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      last = await this.repo.lastVersion(tenantId, cmd.name);
      const version = last + 1;
      const written = await this.repo.write(tenantId, cmd.name, last, version, this.cipher.seal(tenantId, cmd.name, version, cmd.value));
      if (written) return written;
    }
    throw new ConcurrencyConflict('secret', cmd.name, last);
  }
}
