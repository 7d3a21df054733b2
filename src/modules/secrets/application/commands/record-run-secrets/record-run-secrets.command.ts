import { Command } from '@nestjs/cqrs';
import type { ResolvedSecret } from '../../../../../common/secrets/secret-scrubber';

/**
 * For the tool executor: the values a run just resolved (`${secret:NAME}` of the tenant and
 * `${env:NAME}`), recorded sealed BEFORE the outbound request is sent, so that whatever arrives
 * on the run later (a callback, a client tool output, on any node, after a rotation) is scrubbed
 * of every value the run resolved (`RunSecretValuesQuery`).
 */
export class RecordRunSecretsCommand extends Command<void> {
  constructor(
    readonly tenantId: string,
    readonly runId: string,
    readonly sessionId: string,
    readonly values: readonly ResolvedSecret[],
  ) {
    super();
  }
}
