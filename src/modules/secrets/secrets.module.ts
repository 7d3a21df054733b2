import { Module } from '@nestjs/common';
import { AppConfig } from '../../common/config/app-config';
import { resolveSecretsKey } from '../../common/config/secrets-key';
import { SecretsController } from './api/secrets.controller';
import { DeleteSecretHandler } from './application/commands/delete-secret/delete-secret.handler';
import { PutSecretHandler } from './application/commands/put-secret/put-secret.handler';
import { GetSecretHandler } from './application/queries/get-secret/get-secret.handler';
import { ListSecretsHandler } from './application/queries/list-secrets/list-secrets.handler';
import { RecordRunSecretsHandler } from './application/commands/record-run-secrets/record-run-secrets.handler';
import { RunSecretValuesHandler } from './application/queries/run-secret-values/run-secret-values.handler';
import { ResolveSecretsHandler } from './application/queries/resolve-secrets/resolve-secrets.handler';
import { SecretCipher } from './domain/secret-cipher';
import { SecretRepository } from './domain/secret.repository';
import { SecretTypeormRepository } from './infrastructure/secret.typeorm-repository';

/**
 * Tenant secrets (CONTRACT section 13): admin commands and queries over `tenant_secrets`, values
 * sealed under SECRETS_KEY. Other modules read values only through `ResolveSecretsQuery` (on the
 * global QueryBus: importing this module is not needed); nothing else reads this table.
 */
@Module({
  controllers: [SecretsController],
  providers: [
    { provide: SecretCipher, inject: [AppConfig], useFactory: (config: AppConfig) => new SecretCipher(resolveSecretsKey(config)) },
    { provide: SecretRepository, useClass: SecretTypeormRepository },
    PutSecretHandler,
    DeleteSecretHandler,
    ListSecretsHandler,
    GetSecretHandler,
    ResolveSecretsHandler,
    RecordRunSecretsHandler,
    RunSecretValuesHandler,
  ],
})
export class SecretsModule {}
