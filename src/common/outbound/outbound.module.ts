import { Global, Module } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { OutboundHttpClient, OutboundUrlPolicy } from './outbound-http';

/** The guarded outbound HTTP client (allow-list, no redirects, deadlines, body caps), one per node. */
@Global()
@Module({
  providers: [
    {
      provide: OutboundHttpClient,
      useFactory: (config: AppConfig) => new OutboundHttpClient(new OutboundUrlPolicy(config.outboundUrlAllowlist)),
      inject: [AppConfig],
    },
  ],
  exports: [OutboundHttpClient],
})
export class OutboundModule {}
