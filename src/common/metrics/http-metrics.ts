import type { RequestObserver } from '../logging/http-logging';
import { Metrics } from './metrics';

/**
 * Records every finished non-SSE request in the latency histogram (route template, never the raw
 * URL), error responses by code (429s by route), and idempotent replays.
 */
export function httpMetricsObserver(metrics: Metrics): RequestObserver {
  return (req, reply, { route, status, seconds, stream, code }) => {
    if (status >= 400) metrics.recordHttpError(status, code ?? 'unknown', route);
    if (stream) return;
    metrics.recordHttp(req.method, route, status, seconds);
    if (reply.getHeader('idempotent-replayed') === 'true') metrics.recordIdempotencyReplay(route);
  };
}
