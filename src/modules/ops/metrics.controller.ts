import { Controller, Get, Res } from '@nestjs/common';
import { ApiOperation, ApiProduces, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Public } from '../../common/auth/auth.decorators';
import { Metrics } from '../../common/metrics/metrics';

const EXAMPLE = [
  '# HELP agent_api_runs Non-terminal runs in the database by status (read at scrape time by a bounded query)',
  '# TYPE agent_api_runs gauge',
  'agent_api_runs{status="queued"} 3',
  'agent_api_runs{status="running"} 7',
  '# HELP agent_api_sse_streams_open Open SSE streams on this node',
  '# TYPE agent_api_sse_streams_open gauge',
  'agent_api_sse_streams_open 12',
  '',
].join('\n');

/** Prometheus scrape endpoint; no API key (keep it off the public network). */
@ApiTags('Operations')
@Public()
@Controller()
export class MetricsController {
  constructor(private readonly metrics: Metrics) {}

  @Get('metrics')
  @ApiOperation({
    summary: 'Prometheus metrics of this node',
    description:
      'Prometheus text format: HTTP latency (method, route template, status), error responses by code, 429s and idempotent replays by route; ' +
      'runs by status, runs started and finished (status, reason), run duration, time to first event, model and tool call latency by name; ' +
      'events appended, open SSE streams, live event delivery lag, worker leases held, database pool waits, the audit outbox backlog; process metrics. ' +
      'Labels never carry run or session ids. Needs no API key: keep it off the public network (deploy/nginx.conf denies it there).',
    security: [],
  })
  @ApiProduces('text/plain')
  @ApiResponse({ status: 200, description: 'Prometheus exposition format 0.0.4', content: { 'text/plain': { schema: { type: 'string' }, example: EXAMPLE } } })
  async scrape(@Res() reply: FastifyReply): Promise<void> {
    const body = await this.metrics.render();
    await reply.status(200).header('content-type', this.metrics.contentType()).header('cache-control', 'no-store').send(body);
  }
}
