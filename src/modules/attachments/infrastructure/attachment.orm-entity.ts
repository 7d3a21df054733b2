import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { AttachmentPurpose, AttachmentStatus } from '../domain/attachment.aggregate';

const bigintNumber = { to: (v: number) => v, from: (v: string | number) => Number(v) };

@Entity('attachments')
export class AttachmentOrmEntity {
  @PrimaryColumn('text') id!: string;
  @Column('text', { name: 'tenant_id' }) tenantId!: string;
  @Column('text', { name: 'subject_id' }) subjectId!: string;
  @Column('text') filename!: string;
  @Column('text', { name: 'media_type' }) mediaType!: string;
  @Column('text', { name: 'declared_type', nullable: true }) declaredType!: string | null;
  @Column('bigint', { name: 'size_bytes', transformer: bigintNumber }) sizeBytes!: number;
  @Column('text', { nullable: true }) sha256!: string | null;
  @Column('text') status!: AttachmentStatus;
  @Column('text') purpose!: AttachmentPurpose;
  @Column('text', { name: 'rejection_reason', nullable: true }) rejectionReason!: string | null;
  @Column('text', { name: 'storage_key' }) storageKey!: string;
  @Column('integer') version!: number;
  @Column({ type: 'timestamptz', name: 'scan_lease_until', nullable: true }) scanLeaseUntil!: Date | null;
  @Column('integer', { name: 'scan_attempts' }) scanAttempts!: number;
  @Column({ type: 'timestamptz', name: 'expires_at' }) expiresAt!: Date;
  @Column({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
  @Column({ type: 'timestamptz', name: 'updated_at' }) updatedAt!: Date;
}
