import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { AuditKeyedChain1764497400000 } from '../../migrations/1764497400000-audit-keyed-chain';
import { dataSourceOptions } from '../../src/common/database/database.module';
import { EmbeddedPostgres } from '../../src/common/database/embedded-postgres';
import { runMigrationsLocked } from '../../src/common/database/migrate-locked';
import { AuditChainKey, AuditRecord, GENESIS_HASH, legacyAuditHash } from '../../src/modules/audit/domain/audit-record';
import { AUDIT_COLUMNS, auditRecordToParams, auditRowToDomain } from '../../src/modules/audit/infrastructure/audit-row';
import { createFreshDatabase, KEYS, startTestApp } from '../helpers/test-app';

const BEFORE_KEYED = MIGRATIONS.slice(0, MIGRATIONS.indexOf(AuditKeyedChain1764497400000));

/** A chain of `n` records as the service wrote them before the chain was keyed (unkeyed SHA-256). */
function legacyChain(tenantId: string, n: number): AuditRecord[] {
  let prev = GENESIS_HASH;
  return Array.from({ length: n }, (_, i) => {
    const body = {
      id: `aud_legacy_${i + 1}`,
      tenantId,
      seq: i + 1,
      occurredAt: new Date(Date.UTC(2025, 0, 1, 0, 0, i)),
      actorSubjectId: 'admin_a',
      actorRole: 'admin',
      actorKeyId: 'key_old',
      action: 'POST /v1/sessions',
      resourceType: 'session',
      resourceId: `sess_old_${i}`,
      sessionId: `sess_old_${i}`,
      runId: null,
      requestId: `req_old_${i}`,
      outcome: 'ok',
      status: 201,
      data: { i },
    };
    const hash = legacyAuditHash(prev, body);
    const r = { ...body, prevHash: prev, hash, mac: null };
    prev = hash;
    return r;
  });
}

/**
 * Upgrading a database whose chains were hashed with the old unkeyed SHA-256: the old records
 * keep verifying as before, the first keyed record is chained onto them, and the boundary is
 * part of the head's tag (so keyed records can't be passed off as old ones later).
 */
describe('migration to the keyed audit chain', () => {
  it('keeps old chains verifying, chains keyed records onto them, and needs the key when there are heads to tag', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'agent-api-keyed-'));
    const pg = await createFreshDatabase();
    const embedded = pg ? null : new EmbeddedPostgres(dataDir, 4);
    const url = pg ? pg.url : await embedded!.start();
    const old = legacyChain('tenant_a', 3);
    try {
      const before = new DataSource({ ...dataSourceOptions(url, 2), migrations: BEFORE_KEYED });
      await before.initialize();
      await runMigrationsLocked(before);
      for (const r of old) {
        // The columns of that time (no mac yet).
        const params = auditRecordToParams(r).slice(0, -1);
        await before.query(
          `INSERT INTO audit_records (${AUDIT_COLUMNS.replace(', mac', '')}) VALUES (${params.map((_, k) => `$${k + 1}${k === 15 ? '::jsonb' : ''}`).join(', ')})`,
          params,
        );
      }
      await before.query(`INSERT INTO audit_chain_heads (tenant_id, last_seq, last_hash) VALUES ('tenant_a', 3, $1)`, [old[2].hash]);
      await before.destroy();

      // Without the key the migration can't tag the existing heads: it fails and changes nothing.
      const keyless = new DataSource({ ...dataSourceOptions(url, 2) });
      await keyless.initialize();
      await expect(runMigrationsLocked(keyless)).rejects.toThrow(/tags the existing audit chain heads with AUDIT_HMAC_KEY/);
      await expect(keyless.query(`SELECT count(*)::int AS n FROM migrations`)).resolves.toEqual([{ n: BEFORE_KEYED.length }]);
      await keyless.destroy();
      if (embedded) await embedded.stop();
    } catch (err) {
      if (embedded) await embedded.stop().catch(() => undefined);
      if (pg) await pg.drop();
      rmSync(dataDir, { recursive: true, force: true });
      throw err;
    }

    // The app (with its key, here generated into DATA_DIR) applies it at start-up.
    const t = await startTestApp({ DATA_DIR: dataDir, ...(pg ? { DATABASE_URL: pg.url } : {}) });
    try {
      const db = t.app.get(DataSource);
      const key = t.app.get(AuditChainKey);
      await expect(t.call(KEYS.adminA, 'GET', '/v1/admin/audit/verify')).resolves.toMatchObject({ status: 200, body: { ok: true, checked: 3 } });
      const [head]: Array<{ last_seq: string; legacy_until: string }> = await db.query(`SELECT last_seq, legacy_until FROM audit_chain_heads WHERE tenant_id = 'tenant_a'`);
      expect([Number(head.last_seq), Number(head.legacy_until)]).toEqual([3, 3]);

      await expect(t.call(KEYS.adminA, 'POST', '/v1/sessions', { metadata: { after: 'upgrade' } })).resolves.toMatchObject({ status: 201 });
      const verified = await t.call(KEYS.adminA, 'GET', '/v1/admin/audit/verify');
      expect(verified.body.ok).toBe(true);
      expect(verified.body.checked).toBeGreaterThanOrEqual(4);
      const rows = await db.query(`SELECT ${AUDIT_COLUMNS} FROM audit_records WHERE tenant_id = 'tenant_a' AND seq = 4`);
      const fourth = auditRowToDomain(rows[0]);
      const { prevHash, hash, mac, ...body } = fourth;
      expect(prevHash).toBe(old[2].hash);
      // Chained after the upgrades: the public SHA-256 hash and the keyed mac of it.
      expect(hash).toBe(legacyAuditHash(prevHash, body));
      expect(mac).toBe(key.recordMac(hash));

      // Passing record 4 off as an old-scheme one (rewritten, rehashed with SHA-256, its mac kept) is caught there.
      await db.transaction(async (m) => {
        await m.query(`SET LOCAL session_replication_role = replica`);
        await m.query(`UPDATE audit_records SET data = '{"forged":true}'::jsonb, hash = $2 WHERE id = $1`, [
          fourth.id,
          legacyAuditHash(prevHash, { ...body, data: { forged: true } }),
        ]);
      });
      await expect(t.call(KEYS.adminA, 'GET', '/v1/admin/audit/verify')).resolves.toMatchObject({
        status: 200,
        body: { ok: false, checked: 3, first_broken: { id: fourth.id, seq: 4, reason: 'mac_mismatch' } },
      });
    } finally {
      await t.close();
      if (pg) await pg.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000); // every migration twice on a fresh embedded (WASM) database: 78 s at load 8
});
