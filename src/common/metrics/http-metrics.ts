import type { RequestObserver } from '../logging/http-logging';
import { Metrics } from './metrics';

/** Records every finished non-SSE request in the latency histogram (route template, never the raw URL). */
export function httpMetricsObserver(metrics: Metrics): RequestObserver {
  return (req, _reply, { route, status, seconds, stream }) => {
    if (stream) return;
    metrics.recordHttp(req.method, route, status, seconds);
  };
}
