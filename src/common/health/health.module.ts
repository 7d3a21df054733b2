import { Global, Module } from '@nestjs/common';
import { HealthController } from './health.controller';
import { ReadinessReports } from './readiness-reports';

/** /healthz and /readyz; `ReadinessReports` is injectable everywhere (modules add to /readyz). */
@Global()
@Module({ controllers: [HealthController], providers: [ReadinessReports], exports: [ReadinessReports] })
export class HealthModule {}
