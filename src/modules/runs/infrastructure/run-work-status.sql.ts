import { Injectable } from '@nestjs/common';
import { SessionWorkStatusSql } from '../../sessions/domain/work-status';
import { TERMINAL_STATUSES } from '../domain/run-status';

const TERMINAL_SQL = TERMINAL_STATUSES.map((s) => `'${s}'`).join(',');

/**
 * A session's work status from its runs (CONTRACT section 7): its active run (the first
 * non-terminal one, FIFO) says `waiting` (waiting_for_*) or `running` (queued, running,
 * cancelling); without one, its newest run's terminal status (`completed` is `idle`); no run: `idle`.
 */
@Injectable()
export class RunWorkStatusSql extends SessionWorkStatusSql {
  expression(sessionId: string): string {
    return `COALESCE(
      (SELECT CASE WHEN r.status LIKE 'waiting_for_%' THEN 'waiting' ELSE 'running' END FROM runs r
        WHERE r.session_id = ${sessionId} AND r.status NOT IN (${TERMINAL_SQL}) ORDER BY r.created_at, r.id LIMIT 1),
      (SELECT CASE WHEN r.status = 'completed' THEN 'idle' ELSE r.status END FROM runs r
        WHERE r.session_id = ${sessionId} ORDER BY r.created_at DESC, r.id DESC LIMIT 1),
      'idle')`;
  }
}
