import { Injectable } from '@nestjs/common';

/** A component's state as /readyz shows it; `ready: false` makes /readyz answer 503. */
export interface ComponentReport {
  ready: boolean;
  [detail: string]: unknown;
}

/**
 * What modules add to /readyz besides the database: each registers a named, synchronous report
 * (read from memory). A component that degrades gracefully (the NATS notifier) reports
 * `ready: true` with its state, so a load balancer keeps the node while operators see it.
 */
@Injectable()
export class ReadinessReports {
  private readonly reports = new Map<string, () => ComponentReport>();

  register(name: string, report: () => ComponentReport): void {
    this.reports.set(name, report);
  }

  snapshot(): Record<string, ComponentReport> {
    const out: Record<string, ComponentReport> = {};
    for (const [name, report] of this.reports) out[name] = report();
    return out;
  }
}
