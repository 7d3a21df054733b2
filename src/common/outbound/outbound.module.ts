import { DynamicModule, Global, Logger, Module, OnApplicationBootstrap } from '@nestjs/common';
import { OutboundHttpClient, OutboundUrlPolicy } from './outbound-http';

/**
 * The guarded outbound HTTP client (allow-list, no redirects, deadlines, body caps), one per node.
 * Given the allow-list (OUTBOUND_URL_ALLOWLIST, validated by config with `OutboundUrlPolicy.entryProblem`)
 * rather than reading AppConfig: config uses this module's rule, so this module does not use config.
 */
@Global()
@Module({})
export class OutboundModule implements OnApplicationBootstrap {
  static forRoot(allowlist: readonly string[]): DynamicModule {
    return {
      module: OutboundModule,
      providers: [{ provide: OutboundHttpClient, useFactory: () => new OutboundHttpClient(new OutboundUrlPolicy(allowlist)) }],
      exports: [OutboundHttpClient],
    };
  }

  constructor(private readonly outbound: OutboundHttpClient) {}

  /** Start-up says where outbound calls may go, and that none may until the operator lists prefixes. */
  onApplicationBootstrap(): void {
    const logger = new Logger('Outbound');
    if (this.outbound.policy.closed) {
      logger.warn(
        'OUTBOUND_URL_ALLOWLIST is empty: outbound calls (http and mcp tools, webhooks) are off until you list URL prefixes in it ' +
          '(e.g. https://api.example.com/tools/,http://10.0.0.5:*)',
      );
    } else {
      logger.debug(`outbound calls allowed to: ${this.outbound.policy.allowlist.join(', ')}`);
    }
  }
}
