import { Injectable } from '@nestjs/common';
import { In } from 'typeorm';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { ConcurrencyConflict } from '../../../common/errors/domain-error';
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
  constructor(private readonly uow: UnitOfWork) {
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
    const result = await this.repo
      .createQueryBuilder()
      .update(AttachmentOrmEntity)
      .set({
        filename: s.filename,
        mediaType: s.mediaType,
        sizeBytes: s.sizeBytes,
        sha256: s.sha256,
        status: s.status,
        purpose: s.purpose,
        rejectionReason: s.rejectionReason,
        version: s.version,
        expiresAt: s.expiresAt,
        updatedAt: s.updatedAt,
        // A state change ends any scan lease.
        scanLeaseUntil: null,
      })
      .where('id = :id AND version = :expected', { id: s.id, expected: a.expectedVersion })
      .execute();
    if (result.affected !== 1) throw new ConcurrencyConflict('attachment', s.id, a.expectedVersion);
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
