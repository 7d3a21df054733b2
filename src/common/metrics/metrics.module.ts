import { Global, Module } from '@nestjs/common';
import { Metrics } from './metrics';

/** The node's metrics registry, injectable everywhere (writers record, /metrics renders). */
@Global()
@Module({ providers: [Metrics], exports: [Metrics] })
export class MetricsModule {}
