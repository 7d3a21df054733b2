import { Module } from '@nestjs/common';
import { MetricsController } from './metrics.controller';
import { MetricsSources } from './metrics-sources';

/** Operability: the Prometheus endpoint and its scrape-time sources. */
@Module({ controllers: [MetricsController], providers: [MetricsSources] })
export class OpsModule {}
