import { Query } from '@nestjs/cqrs';

/**
 * For other modules (the tool executor's `${secret:NAME}` headers): the decrypted values of the
 * tenant's secrets among `names`, by name. A name that is not set (never, deleted, or not a
 * well-formed name) is simply absent from the map; telling the caller why is the caller's job.
 * The values must go nowhere but the outbound request: not into a log, event, audit or stored row.
 */
export class ResolveSecretsQuery extends Query<Map<string, string>> {
  constructor(
    readonly tenantId: string,
    readonly names: string[],
  ) {
    super();
  }
}
