import { Injectable } from '@nestjs/common';
import type { Principal } from '../../../common/auth/principal';
import { toJsonb } from '../../../common/database/jsonb';
import { queryRows } from '../../../common/database/sql';
import { guardedStatement } from '../../../common/database/statement';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { invalidCursor, SortOrder } from '../../../common/http/pagination';
import { IntegrationEvent, IntegrationEventOutbox } from '../../../common/outbox/integration-events';
import { AutomationCap, AutomationInvocation, AutomationProps } from '../domain/automation';
import { AutomationRepository } from '../domain/automation.repository';

type Row = Record<string, any>;

const AUTOMATION_COLUMNS =
  'id, tenant_id, subject_id, owner_role, name, schedule, target, input, status, metadata, created_by, next_run_at, revision, created_at, updated_at';
const INVOCATION_COLUMNS = 'id, automation_id, tenant_id, source, slot, status, skip_reason, error, run_id, session_id, created_at, updated_at';

const date = (v: unknown): Date | null => (v === null || v === undefined ? null : v instanceof Date ? v : new Date(String(v)));

function toAutomation(r: Row): AutomationProps {
  const schedule = r.schedule;
  return {
    id: r.id,
    tenantId: r.tenant_id,
    subjectId: r.subject_id,
    ownerRole: r.owner_role,
    name: r.name,
    schedule: schedule.type === 'once' ? { type: 'once', at: new Date(schedule.at) } : { type: 'cron', expression: schedule.expression, timezone: schedule.timezone },
    target: r.target.type === 'session' ? { type: 'session', sessionId: r.target.session_id } : { type: 'new_session', agentId: r.target.agent_id, metadata: r.target.metadata ?? {} },
    input: r.input,
    status: r.status,
    metadata: r.metadata ?? {},
    createdBy: r.created_by.type === 'agent' ? { type: 'agent', sessionId: r.created_by.session_id, toolCallId: r.created_by.tool_call_id } : { type: 'developer' },
    nextRunAt: date(r.next_run_at),
    revision: Number(r.revision),
    createdAt: date(r.created_at)!,
    updatedAt: date(r.updated_at)!,
  };
}

function toInvocation(r: Row): AutomationInvocation {
  return {
    id: r.id,
    automationId: r.automation_id,
    tenantId: r.tenant_id,
    source: r.source,
    slot: date(r.slot),
    status: r.status,
    skipReason: r.skip_reason ?? null,
    error: r.error ?? null,
    runId: r.run_id ?? null,
    sessionId: r.session_id ?? null,
    createdAt: date(r.created_at)!,
    updatedAt: date(r.updated_at)!,
  };
}

function rowValues(a: AutomationProps): unknown[] {
  const schedule = a.schedule.type === 'once' ? { type: 'once', at: a.schedule.at.toISOString() } : a.schedule;
  const target = a.target.type === 'session' ? { type: 'session', session_id: a.target.sessionId } : { type: 'new_session', agent_id: a.target.agentId, metadata: a.target.metadata };
  const createdBy = a.createdBy.type === 'agent' ? { type: 'agent', session_id: a.createdBy.sessionId, tool_call_id: a.createdBy.toolCallId } : { type: 'developer' };
  return [
    a.id,
    a.tenantId,
    a.subjectId,
    a.ownerRole,
    a.name,
    toJsonb(schedule),
    toJsonb(target),
    toJsonb(a.input),
    a.status,
    toJsonb(a.metadata),
    toJsonb(createdBy),
    a.nextRunAt,
    a.revision,
    a.createdAt,
    a.updatedAt,
  ];
}

/** The automations tables: the only code that reads or writes them. */
@Injectable()
export class AutomationPgRepository extends AutomationRepository {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly outbox: IntegrationEventOutbox,
  ) {
    super();
  }

  private q<T = Row>(sql: string, params: unknown[] = []): Promise<T[]> {
    return queryRows<T>(this.uow.manager, sql, params);
  }

  async insert(a: AutomationProps): Promise<void> {
    await this.q(
      `INSERT INTO automations (${AUTOMATION_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8::jsonb, $9, $10::jsonb, $11::jsonb, $12, $13, $14, $15)`,
      rowValues(a),
    );
  }

  async insertWithinCaps(a: AutomationProps, caps: { perTenant: number; perMember: number }): Promise<AutomationCap | null> {
    return this.uow.run(async () => {
      // The tenant's creates one at a time (a transaction-scoped advisory lock): the count below sees every earlier insert.
      await this.q(`SELECT pg_advisory_xact_lock(hashtextextended('automations:' || $1, 0))`, [a.tenantId]);
      const [c] = await this.q(
        `SELECT count(*)::int AS tenant, count(*) FILTER (WHERE subject_id = $2)::int AS member FROM automations WHERE tenant_id = $1 AND status <> 'completed'`,
        [a.tenantId, a.subjectId],
      );
      if (Number(c.tenant) >= caps.perTenant) return { scope: 'tenant', limit: caps.perTenant };
      if (Number(c.member) >= caps.perMember) return { scope: 'member', limit: caps.perMember };
      await this.insert(a);
      return null;
    });
  }

  async update(a: AutomationProps, expectedRevision: number): Promise<boolean> {
    const v = rowValues(a);
    const rows = await this.q(
      `UPDATE automations SET name = $2, schedule = $3::jsonb, target = $4::jsonb, input = $5::jsonb, status = $6, metadata = $7::jsonb,
              next_run_at = $8, revision = $9, updated_at = $10
        WHERE id = $1 AND revision = $11 RETURNING id`,
      [v[0], v[4], v[5], v[6], v[7], v[8], v[9], v[11], v[12], v[14], expectedRevision],
    );
    return rows.length === 1;
  }

  async find(id: string): Promise<AutomationProps | null> {
    const rows = await this.q(`SELECT ${AUTOMATION_COLUMNS} FROM automations WHERE id = $1`, [id]);
    return rows.length ? toAutomation(rows[0]) : null;
  }

  async delete(id: string): Promise<boolean> {
    const rows = await this.q(`DELETE FROM automations WHERE id = $1 RETURNING id`, [id]);
    return rows.length === 1;
  }

  async list(principal: Principal, page: { after?: string; limit: number; order: SortOrder; sessionId?: string }) {
    const params: unknown[] = [principal.tenantId];
    let where = 'tenant_id = $1';
    if (principal.role !== 'admin') {
      params.push(principal.subjectId);
      where += ` AND subject_id = $${params.length}`;
    }
    if (page.sessionId !== undefined) {
      params.push(page.sessionId);
      where += ` AND target->>'type' = 'session' AND target->>'session_id' = $${params.length}`;
    }
    const rows = await this.keyset('automations', AUTOMATION_COLUMNS, where, params, page);
    return { items: rows.items.map(toAutomation), hasMore: rows.hasMore };
  }

  /** A keyset page on (created_at, id) of `table` rows matching `where`; `after` must be one of them. */
  private async keyset(table: string, columns: string, where: string, params: unknown[], page: { after?: string; limit: number; order: SortOrder }) {
    const p = [...params];
    let cond = where;
    const cmp = page.order === 'asc' ? '>' : '<';
    if (page.after !== undefined) {
      p.push(page.after);
      const cursor = await this.q<{ created_at: Date; id: string }>(`SELECT created_at, id FROM ${table} WHERE ${where} AND id = $${p.length}`, p);
      if (!cursor.length) throw invalidCursor(page.after);
      p.push(cursor[0].created_at);
      cond += ` AND (created_at, id) ${cmp} ($${p.length}, $${p.length - 1})`;
    }
    p.push(page.limit + 1);
    const dir = page.order === 'asc' ? 'ASC' : 'DESC';
    const rows = await this.q(`SELECT ${columns} FROM ${table} WHERE ${cond} ORDER BY created_at ${dir}, id ${dir} LIMIT $${p.length}`, p);
    return { items: rows.slice(0, page.limit), hasMore: rows.length > page.limit };
  }

  async lastInvocations(ids: string[]): Promise<Map<string, AutomationInvocation>> {
    if (ids.length === 0) return new Map();
    const rows = await this.q(
      `SELECT DISTINCT ON (automation_id) ${INVOCATION_COLUMNS} FROM automation_invocations WHERE automation_id = ANY($1::text[])
        ORDER BY automation_id, created_at DESC, id DESC`,
      [ids],
    );
    return new Map(rows.map((r) => [r.automation_id as string, toInvocation(r)]));
  }

  async anyDue(now: Date): Promise<boolean> {
    const rows = await this.q(`SELECT 1 FROM automations WHERE status = 'active' AND next_run_at IS NOT NULL AND next_run_at <= $1 LIMIT 1`, [now]);
    return rows.length > 0;
  }

  async lockDue(now: Date, limit: number): Promise<AutomationProps[]> {
    const rows = await this.q(
      `SELECT ${AUTOMATION_COLUMNS} FROM automations WHERE status = 'active' AND next_run_at IS NOT NULL AND next_run_at <= $1
        ORDER BY next_run_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
      [now, limit],
    );
    return rows.map(toAutomation);
  }

  async insertInvocation(inv: AutomationInvocation): Promise<boolean> {
    const rows = await this.q(
      `INSERT INTO automation_invocations (${INVOCATION_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11, $12)
       ON CONFLICT (automation_id, slot) DO NOTHING RETURNING id`,
      [inv.id, inv.automationId, inv.tenantId, inv.source, inv.slot, inv.status, inv.skipReason, inv.error ? toJsonb(inv.error) : null, inv.runId, inv.sessionId, inv.createdAt, inv.updatedAt],
    );
    return rows.length === 1;
  }

  async advance(id: string, nextRunAt: Date | null, status: AutomationProps['status'], now: Date): Promise<void> {
    await this.q(`UPDATE automations SET next_run_at = $2, status = $3, updated_at = $4, revision = revision + 1 WHERE id = $1`, [id, nextRunAt, status, now]);
  }

  async queued(limit: number): Promise<string[]> {
    const rows = await this.q<{ id: string }>(`SELECT id FROM automation_invocations WHERE status = 'queued' ORDER BY created_at LIMIT $1`, [limit]);
    return rows.map((r) => r.id);
  }

  async lockQueued(id: string): Promise<AutomationInvocation | null> {
    const rows = await this.q(`SELECT ${INVOCATION_COLUMNS} FROM automation_invocations WHERE id = $1 AND status = 'queued' FOR UPDATE SKIP LOCKED`, [id]);
    return rows.length ? toInvocation(rows[0]) : null;
  }

  async markStarted(id: string, runId: string, sessionId: string, now: Date): Promise<void> {
    await this.q(`UPDATE automation_invocations SET status = 'started', run_id = $2, session_id = $3, updated_at = $4 WHERE id = $1`, [id, runId, sessionId, now]);
  }

  async markFailed(id: string, error: { code: string; message: string }, sessionId: string | null, now: Date, event: IntegrationEvent): Promise<boolean> {
    const { sql, params } = guardedStatement({
      guard: (p) => {
        const [i, e, s, n] = p.add(id, toJsonb(error), sessionId, now);
        return `UPDATE automation_invocations SET status = 'failed', error = ${e}::jsonb, session_id = COALESCE(${s}::text, session_id), updated_at = ${n}
                 WHERE id = ${i} AND status = 'queued' RETURNING id`;
      },
      riders: [this.outbox.afterGuard([event])],
    });
    const rows = await this.uow.statement((m) => queryRows(m, sql, params));
    return rows.length === 1;
  }

  async findInvocation(automationId: string, id: string): Promise<AutomationInvocation | null> {
    const rows = await this.q(`SELECT ${INVOCATION_COLUMNS} FROM automation_invocations WHERE id = $1 AND automation_id = $2`, [id, automationId]);
    return rows.length ? toInvocation(rows[0]) : null;
  }

  async findInvocationById(id: string): Promise<AutomationInvocation | null> {
    const rows = await this.q(`SELECT ${INVOCATION_COLUMNS} FROM automation_invocations WHERE id = $1`, [id]);
    return rows.length ? toInvocation(rows[0]) : null;
  }

  async listInvocations(automationId: string, page: { after?: string; limit: number; order: SortOrder }) {
    const rows = await this.keyset('automation_invocations', INVOCATION_COLUMNS, 'automation_id = $1', [automationId], page);
    return { items: rows.items.map(toInvocation), hasMore: rows.hasMore };
  }
}
