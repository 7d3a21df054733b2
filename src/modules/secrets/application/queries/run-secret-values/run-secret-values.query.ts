import { Query } from '@nestjs/cqrs';
import type { ResolvedSecret } from '../../../../../common/secrets/secret-scrubber';

/**
 * For the scrubbing rule: every value the runs `runIds` of `tenantId` (and every run of the
 * sessions `sessionIds`: an audited request on a session) resolved (every version,
 * recorded by `RecordRunSecretsCommand`), by the name it is masked as. Empty for a run that
 * resolved nothing. The values go into a `SecretScrubber` only: never a log, event or row.
 */
export class RunSecretValuesQuery extends Query<ResolvedSecret[]> {
  constructor(
    readonly tenantId: string,
    readonly runIds: readonly string[],
    readonly sessionIds: readonly string[] = [],
  ) {
    super();
  }
}
