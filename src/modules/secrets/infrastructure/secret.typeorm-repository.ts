import { Injectable } from '@nestjs/common';
import { queryRows } from '../../../common/database/sql';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import type { SortOrder } from '../../../common/http/pagination';
import type { SecretMetadata } from '../domain/secret';
import { Page, SealedSecret, SealedUse, SecretRepository } from '../domain/secret.repository';

type Row = Record<string, any>;
const date = (v: unknown): Date => (v instanceof Date ? v : new Date(String(v)));
const bytes = (v: unknown): Buffer => (Buffer.isBuffer(v) ? v : Buffer.from(String(v).replace(/^\\x/, ''), 'hex'));

function toMetadata(r: Row): SecretMetadata {
  return { tenantId: r.tenant_id, name: r.name, version: Number(r.version), createdAt: date(r.created_at), updatedAt: date(r.updated_at) };
}

const METADATA = 'tenant_id, name, version, created_at, updated_at';

/**
 * The secrets module's table (tenant_secrets); nobody else reads or writes it. A deleted secret
 * keeps its row (no ciphertext, `deleted_at` set) so that its name's versions keep counting.
 * Statements run on the unit of work's manager (a command's transaction, when there is one).
 */
@Injectable()
export class SecretTypeormRepository implements SecretRepository {
  constructor(private readonly uow: UnitOfWork) {}

  private q(sql: string, params: unknown[] = []): Promise<Row[]> {
    return queryRows<Row>(this.uow.manager, sql, params);
  }

  async list(tenantId: string, page: { after?: string; limit: number; order: SortOrder }): Promise<Page<SecretMetadata>> {
    const [op, dir] = page.order === 'desc' ? ['<', 'DESC'] : ['>', 'ASC'];
    const rows = await this.q(
      `SELECT ${METADATA} FROM tenant_secrets
        WHERE tenant_id = $1 AND deleted_at IS NULL AND ($2::text IS NULL OR name ${op} $2)
        ORDER BY name ${dir} LIMIT $3`,
      [tenantId, page.after ?? null, page.limit + 1],
    );
    return { items: rows.slice(0, page.limit).map(toMetadata), hasMore: rows.length > page.limit };
  }

  async find(tenantId: string, name: string): Promise<SecretMetadata | null> {
    const [r] = await this.q(`SELECT ${METADATA} FROM tenant_secrets WHERE tenant_id = $1 AND name = $2 AND deleted_at IS NULL`, [tenantId, name]);
    return r ? toMetadata(r) : null;
  }

  async lastVersion(tenantId: string, name: string): Promise<number> {
    // FOR UPDATE (in the command's transaction): writers of one existing name queue here instead of
    // losing the conditional write and retrying; only the very first writes of a name can race.
    const [r] = await this.q(`SELECT version FROM tenant_secrets WHERE tenant_id = $1 AND name = $2 FOR UPDATE`, [tenantId, name]);
    return r ? Number(r.version) : 0;
  }

  async write(tenantId: string, name: string, expectedLast: number, version: number, ciphertext: Buffer): Promise<SecretMetadata | null> {
    // A name set again after a delete is a new secret: created_at starts over, the version goes on.
    const [r] = await this.q(
      `INSERT INTO tenant_secrets AS s (tenant_id, name, version, ciphertext, created_at, updated_at, deleted_at)
       VALUES ($1, $2, $3, $4, now(), now(), NULL)
       ON CONFLICT (tenant_id, name) DO UPDATE SET
         version = EXCLUDED.version,
         ciphertext = EXCLUDED.ciphertext,
         created_at = CASE WHEN s.deleted_at IS NULL THEN s.created_at ELSE EXCLUDED.created_at END,
         updated_at = EXCLUDED.updated_at,
         deleted_at = NULL
       WHERE s.version = $5
       RETURNING ${METADATA}`,
      [tenantId, name, version, ciphertext, expectedLast],
    );
    return r ? toMetadata(r) : null;
  }

  async delete(tenantId: string, name: string): Promise<number | null> {
    const [r] = await this.q(
      `UPDATE tenant_secrets SET ciphertext = NULL, deleted_at = now(), updated_at = now()
        WHERE tenant_id = $1 AND name = $2 AND deleted_at IS NULL RETURNING version`,
      [tenantId, name],
    );
    return r ? Number(r.version) : null;
  }

  async sealed(tenantId: string, names: string[]): Promise<SealedSecret[]> {
    if (names.length === 0) return [];
    const rows = await this.q(
      `SELECT name, version, ciphertext FROM tenant_secrets WHERE tenant_id = $1 AND name = ANY($2::text[]) AND deleted_at IS NULL`,
      [tenantId, names],
    );
    return rows.map((r) => ({ name: r.name, version: Number(r.version), ciphertext: bytes(r.ciphertext) }));
  }

  async recordUses(tenantId: string, run: { runId: string; sessionId: string }, uses: SealedUse[]): Promise<void> {
    if (uses.length === 0) return;
    await this.q(
      `INSERT INTO run_secret_uses (run_id, name, value_key, tenant_id, session_id, ciphertext, resolved_at)
       SELECT $1, u.name, u.value_key, $2, $4, decode(u.ciphertext, 'hex'), now()
         FROM jsonb_to_recordset($3::jsonb) AS u(name text, value_key text, ciphertext text)
       ON CONFLICT (run_id, name, value_key) DO UPDATE SET resolved_at = EXCLUDED.resolved_at`,
      [run.runId, tenantId, JSON.stringify(uses.map((u) => ({ name: u.name, value_key: u.valueKey, ciphertext: u.ciphertext.toString('hex') }))), run.sessionId],
    );
  }

  async usesOf(tenantId: string, of: { runIds: string[]; sessionIds: string[] }): Promise<Array<SealedUse & { runId: string }>> {
    if (of.runIds.length === 0 && of.sessionIds.length === 0) return [];
    const rows = await this.q(
      `SELECT run_id, name, value_key, ciphertext FROM run_secret_uses
        WHERE tenant_id = $1 AND (run_id = ANY($2::text[]) OR session_id = ANY($3::text[]))`,
      [tenantId, of.runIds, of.sessionIds],
    );
    return rows.map((r) => ({ runId: r.run_id, name: r.name, valueKey: r.value_key, ciphertext: bytes(r.ciphertext) }));
  }

  async pruneUses(before: Date): Promise<number> {
    const rows = await this.q(`DELETE FROM run_secret_uses WHERE resolved_at < $1 RETURNING 1`, [before]);
    return rows.length;
  }
}
