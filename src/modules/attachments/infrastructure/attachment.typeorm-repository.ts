import { Injectable } from '@nestjs/common';
import { In } from 'typeorm';
import { queryRows } from '../../../common/database/sql';
import { guardedStatement } from '../../../common/database/statement';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { IntegrationEventOutbox } from '../../../common/outbox/integration-events';
import { ConcurrencyConflict } from '../../../common/errors/domain-error';
import { attachmentIntegrationEvents } from '../domain/attachment-integration-events';
import { Attachment } from '../domain/attachment.aggregate';
import { AttachmentRepository } from '../domain/attachment.repository';
import { AttachmentOrmEntity } from './attachment.orm-entity';

function toDomain(row: AttachmentOrmEntity): Attachment {
  return Attachment.restore({
    id: row.id,
    tenantId: row.tenantId,
    subjectId: row.subjectId,
    filename: row.filename,
    mediaType: row.mediaType,
    declaredType: row.declaredType,
    sizeBytes: Number(row.sizeBytes),
    sha256: row.sha256,
    status: row.status,
    purpose: row.purpose,
    rejectionReason: row.rejectionReason,
    storageKey: row.storageKey,
    version: row.version,
    expiresAt: row.expiresAt,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  });
}

@Injectable()
export class AttachmentTypeormRepository extends AttachmentRepository {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly outbox: IntegrationEventOutbox,
  ) {
    super();
  }

  private get repo() {
    return this.uow.manager.getRepository(AttachmentOrmEntity);
  }

  async insert(a: Attachment): Promise<void> {
    const s = a.snapshot();
    await this.repo.insert({ ...s, scanLeaseUntil: null, scanAttempts: 0 });
  }

  async save(a: Attachment): Promise<void> {
    if (!a.isDirty) return;
    const s = a.snapshot();
    // A scan verdict publishes its integration event in the same statement (only if the update matched).
    const published = attachmentIntegrationEvents(s, a.recordedEvents);
    const { sql, params } = guardedStatement({
      guard: (p) => {
        const [filename, mediaType, size, sha, status, purpose, reason, version, expires, updated, id, expected] = p.add(
          s.filename,
          s.mediaType,
          s.sizeBytes,
          s.sha256,
          s.status,
          s.purpose,
          s.rejectionReason,
          s.version,
          s.expiresAt,
          s.updatedAt,
          s.id,
          a.expectedVersion,
        );
        // A state change ends any scan lease.
        return `UPDATE attachments SET filename = ${filename}, media_type = ${mediaType}, size_bytes = ${size}, sha256 = ${sha}, status = ${status},
                  purpose = ${purpose}, rejection_reason = ${reason}, version = ${version}, expires_at = ${expires}, updated_at = ${updated}, scan_lease_until = NULL
                WHERE id = ${id} AND version = ${expected} RETURNING id`;
      },
      riders: published.length > 0 ? [this.outbox.afterGuard(published)] : [],
    });
    const rows = await queryRows(this.uow.manager, sql, params);
    if (rows.length !== 1) throw new ConcurrencyConflict('attachment', s.id, a.expectedVersion);
  }

  async findById(id: string): Promise<Attachment | null> {
    const row = await this.repo.findOne({ where: { id } });
    return row ? toDomain(row) : null;
  }

  async findByIds(ids: string[]): Promise<Attachment[]> {
    if (ids.length === 0) return [];
    const rows = await this.repo.find({ where: { id: In(ids) } });
    return rows.map(toDomain);
  }

  async deleteIfUploading(id: string): Promise<boolean> {
    const result = await this.repo.delete({ id, status: 'uploading' });
    return (result.affected ?? 0) > 0;
  }

  async claimForScan(leaseMs: number): Promise<{ id: string; attempts: number } | null> {
    // TypeORM answers an UPDATE ... RETURNING with [rows, affected].
    const [rows]: [Array<{ id: string; scan_attempts: number }>, number] = await this.uow.manager.query(
      `UPDATE attachments
          SET scan_lease_until = now() + ($1 || ' milliseconds')::interval, scan_attempts = scan_attempts + 1
        WHERE id = (
          SELECT id FROM attachments
           WHERE status = 'scanning' AND (scan_lease_until IS NULL OR scan_lease_until < now())
           ORDER BY updated_at, id
           FOR UPDATE SKIP LOCKED
           LIMIT 1)
        RETURNING id, scan_attempts`,
      [String(leaseMs)],
    );
    const row = rows[0];
    return row ? { id: row.id, attempts: Number(row.scan_attempts) } : null;
  }

  async releaseScanLease(id: string): Promise<void> {
    await this.uow.manager.query(`UPDATE attachments SET scan_lease_until = NULL WHERE id = $1 AND status = 'scanning'`, [id]);
  }

  async findExpired(now: Date, limit: number): Promise<string[]> {
    const rows: Array<{ id: string }> = await this.uow.manager.query(
      `SELECT id FROM attachments WHERE status = 'ready' AND expires_at <= $1 ORDER BY expires_at LIMIT $2`,
      [now, limit],
    );
    return rows.map((r) => r.id);
  }

  async findStaleUploads(before: Date, limit: number): Promise<string[]> {
    const rows: Array<{ id: string }> = await this.uow.manager.query(
      `SELECT id FROM attachments WHERE status = 'uploading' AND created_at < $1 ORDER BY created_at LIMIT $2`,
      [before, limit],
    );
    return rows.map((r) => r.id);
  }
}
