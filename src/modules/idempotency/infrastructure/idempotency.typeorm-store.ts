import { Injectable } from '@nestjs/common';
import { toJsonb } from '../../../common/database/jsonb';
import { queryRows } from '../../../common/database/sql';
import { BatchWrite, UnitOfWork } from '../../../common/database/unit-of-work';
import { ClaimResult, IdempotencyKeyTaken, IdempotencyScope, IdempotencyStore, SecretRef, StoredResponse } from '../domain/idempotency.store';

interface RecordRow {
  id: string;
  fingerprint: string;
  state: 'in_progress' | 'committed' | 'completed';
  response_status: number | null;
  response_body: string | null;
  response_headers: Record<string, string> | null;
  response_secret_ref: SecretRef | string | null;
  locked_until: Date;
  expires_at: Date;
}

@Injectable()
export class IdempotencyTypeormStore extends IdempotencyStore {
  constructor(private readonly uow: UnitOfWork) {
    super();
  }

  async claim(s: IdempotencyScope, fingerprint: string, lockMs: number, ttlMs: number): Promise<ClaimResult> {
    const m = this.uow.manager;
    for (let attempt = 0; attempt < 3; attempt++) {
      const inserted: Array<{ id: string }> = await m.query(
        `INSERT INTO idempotency_records (tenant_id, subject_id, scope, idem_key, fingerprint, state, locked_until, expires_at)
         VALUES ($1, $2, $3, $4, $5, 'in_progress', now() + ($6 || ' milliseconds')::interval, now() + ($7 || ' milliseconds')::interval)
         ON CONFLICT (tenant_id, subject_id, scope, idem_key) DO NOTHING
         RETURNING id`,
        [s.tenantId, s.subjectId, s.scope, s.key, fingerprint, String(lockMs), String(ttlMs)],
      );
      if (inserted.length === 1) return { kind: 'claimed', recordId: String(inserted[0].id) };

      const rows: Array<RecordRow & { expired: boolean; lock_expired: boolean }> = await m.query(
        `SELECT id, fingerprint, state, response_status, response_body, response_headers, response_secret_ref, locked_until, expires_at,
                expires_at <= now() AS expired, locked_until <= now() AS lock_expired
           FROM idempotency_records WHERE tenant_id = $1 AND subject_id = $2 AND scope = $3 AND idem_key = $4`,
        [s.tenantId, s.subjectId, s.scope, s.key],
      );
      const row = rows[0];
      if (!row) continue; // released or purged between the two statements: try again
      if (row.expired) {
        // A purged key is a new key.
        await m.query(`DELETE FROM idempotency_records WHERE id = $1 AND expires_at <= now()`, [row.id]);
        continue;
      }
      if (row.fingerprint !== fingerprint) return { kind: 'conflict' };
      if (row.state === 'completed' || (row.state === 'committed' && row.lock_expired)) {
        return {
          kind: 'replay',
          response: {
            status: row.response_status!,
            body: row.response_body,
            headers: row.response_headers ?? {},
            secretRef: typeof row.response_secret_ref === 'string' ? (JSON.parse(row.response_secret_ref) as SecretRef) : row.response_secret_ref,
          },
        };
      }
      if (row.state === 'in_progress' && row.lock_expired) {
        // The first executor died before its operation committed (its commit would have
        // completed the record): take the claim over, conditionally, so only one retry wins.
        const taken = await queryRows<{ id: string }>(
          m,
          `UPDATE idempotency_records SET locked_until = now() + ($2 || ' milliseconds')::interval
            WHERE id = $1 AND state = 'in_progress' AND locked_until = $3 RETURNING id`,
          [row.id, String(lockMs), row.locked_until],
        );
        if (taken.length === 1) return { kind: 'claimed', recordId: String(row.id) };
      }
      return { kind: 'in_progress' };
    }
    return { kind: 'in_progress' };
  }

  async complete(recordId: string, r: StoredResponse, state: 'completed' | 'committed', lockMs = 0): Promise<void> {
    await this.uow.write(this.completion(recordId, r, state, lockMs));
  }

  insertCompleted(s: IdempotencyScope, fingerprint: string, r: StoredResponse, ttlMs: number): BatchWrite {
    return {
      ctes: (p) => {
        const [tenant, subject, scope, key, fp, status, body, headers, ref, ttl] = p.add(
          s.tenantId,
          s.subjectId,
          s.scope,
          s.key,
          fingerprint,
          r.status,
          r.body,
          toJsonb(r.headers),
          r.secretRef ? toJsonb(r.secretRef) : null,
          String(ttlMs),
        );
        return `idem_insert AS (
          INSERT INTO idempotency_records (tenant_id, subject_id, scope, idem_key, fingerprint, state, response_status, response_body, response_headers, response_secret_ref, locked_until, expires_at)
          VALUES (${tenant}, ${subject}, ${scope}, ${key}, ${fp}, 'completed', ${status}, ${body}, ${headers}::jsonb, ${ref}::jsonb, now(), now() + (${ttl} || ' milliseconds')::interval)
          ON CONFLICT (tenant_id, subject_id, scope, idem_key) DO NOTHING
          RETURNING id
        )`;
      },
      expect: 'EXISTS (SELECT 1 FROM idem_insert)',
      checkFirst: true,
      fail: () => new IdempotencyKeyTaken(),
    };
  }

  completion(recordId: string, r: StoredResponse, state: 'completed' | 'committed', lockMs = 0): BatchWrite {
    return {
      ctes: (p) => {
        const [id, st, status, body, headers, ref, lock] = p.add(recordId, state, r.status, r.body, toJsonb(r.headers), r.secretRef ? toJsonb(r.secretRef) : null, String(lockMs));
        return `idem_complete AS (
          UPDATE idempotency_records
             SET state = ${st}, response_status = ${status}, response_body = ${body}, response_headers = ${headers}::jsonb, response_secret_ref = ${ref}::jsonb,
                 locked_until = now() + (${lock} || ' milliseconds')::interval
           WHERE id = ${id}
        )`;
      },
    };
  }

  async release(recordId: string): Promise<void> {
    await this.uow.manager.query(`DELETE FROM idempotency_records WHERE id = $1 AND state = 'in_progress'`, [recordId]);
  }

  async purgeExpired(limit: number): Promise<number> {
    const rows = await queryRows<{ id: string }>(
      this.uow.manager,
      `DELETE FROM idempotency_records WHERE id IN (SELECT id FROM idempotency_records WHERE expires_at <= now() LIMIT $1) RETURNING id`,
      [limit],
    );
    return rows.length;
  }
}
