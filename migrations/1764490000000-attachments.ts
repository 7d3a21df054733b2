import { MigrationInterface, QueryRunner } from 'typeorm';

/** Attachments (CONTRACT section 11) and their content, stored in the database in chunks. */
export class Attachments1764490000000 implements MigrationInterface {
  name = 'Attachments1764490000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE attachments (
        id                text PRIMARY KEY,
        tenant_id         text NOT NULL,
        subject_id        text NOT NULL,
        filename          text NOT NULL,
        media_type        text NOT NULL,
        declared_type     text,
        size_bytes        bigint NOT NULL DEFAULT 0,
        sha256            text,
        status            text NOT NULL CHECK (status IN ('uploading', 'uploaded', 'scanning', 'ready', 'rejected', 'failed', 'expired', 'deleted')),
        purpose           text NOT NULL,
        rejection_reason  text,
        storage_key       text NOT NULL UNIQUE,
        version           integer NOT NULL,
        scan_lease_until  timestamptz(3),
        scan_attempts     integer NOT NULL DEFAULT 0,
        expires_at        timestamptz(3) NOT NULL,
        created_at        timestamptz(3) NOT NULL,
        updated_at        timestamptz(3) NOT NULL
      )`);
    await q.query(`CREATE INDEX attachments_owner_created ON attachments (tenant_id, subject_id, created_at, id)`);
    // Work queues: the scan worker and the sweepers only look at these few statuses.
    await q.query(`CREATE INDEX attachments_scanning ON attachments (updated_at, id) WHERE status = 'scanning'`);
    await q.query(`CREATE INDEX attachments_ready_expiry ON attachments (expires_at) WHERE status = 'ready'`);
    await q.query(`CREATE INDEX attachments_uploading ON attachments (created_at) WHERE status = 'uploading'`);
    await q.query(`
      CREATE TABLE attachment_blobs (
        storage_key  text NOT NULL,
        seq          integer NOT NULL,
        tenant_id    text NOT NULL,
        data         bytea NOT NULL,
        PRIMARY KEY (storage_key, seq)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE attachment_blobs`);
    await q.query(`DROP TABLE attachments`);
  }
}
