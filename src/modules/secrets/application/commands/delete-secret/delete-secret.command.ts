import { Command } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';

/** Deletes the caller's tenant's secret `name` (its ciphertext is erased); answers the deleted version. */
export class DeleteSecretCommand extends Command<{ version: number }> {
  constructor(
    readonly principal: Principal,
    readonly name: string,
  ) {
    super();
  }
}
