import { Controller, Get, HttpCode, Inject, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../../migrations';
import { Public } from '../auth/auth.decorators';
import { DATABASE_TARGET, DatabaseTarget } from '../database/database.module';
import { ReadinessReports } from './readiness-reports';

/** Liveness and readiness; no API key needed. */
@ApiExcludeController()
@Public()
@Controller()
export class HealthController {
  constructor(
    private readonly dataSource: DataSource,
    @Inject(DATABASE_TARGET) private readonly target: DatabaseTarget,
    private readonly reports: ReadinessReports,
  ) {}

  @Get('healthz')
  @HttpCode(200)
  healthz() {
    return { status: 'ok' };
  }

  @Get('readyz')
  async readyz(@Res() reply: FastifyReply) {
    try {
      const rows: Array<{ n: string }> = await Promise.race([
        this.dataSource.query(`SELECT count(*) AS n FROM migrations`),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), 2000).unref()),
      ]);
      if (Number(rows[0]?.n) < MIGRATIONS.length) throw new Error('migrations pending');
      const components = this.reports.snapshot();
      const notReady = Object.entries(components).filter(([, r]) => !r.ready);
      if (notReady.length > 0) {
        return reply
          .status(503)
          .header('retry-after', '2')
          .send({
            error: {
              code: 'unavailable',
              message: `not ready: ${notReady.map(([name]) => name).join(', ')}`,
              type: 'server_error',
              retryable: true,
              request_id: String(reply.request.id),
              run_id: null,
              details: { database: this.target.kind, ...components },
            },
          });
      }
      return reply.status(200).send({ status: 'ready', database: this.target.kind, ...components });
    } catch {
      return reply
        .status(503)
        .header('retry-after', '2')
        .send({
          error: {
            code: 'unavailable',
            message: 'the database is not reachable or not migrated',
            type: 'server_error',
            retryable: true,
            request_id: String(reply.request.id),
            run_id: null,
            details: { database: this.target.kind },
          },
        });
    }
  }
}
