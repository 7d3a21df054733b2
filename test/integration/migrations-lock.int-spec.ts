import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { dataSourceOptions } from '../../src/common/database/database.module';
import { EmbeddedPostgres } from '../../src/common/database/embedded-postgres';
import { runMigrationsLocked } from '../../src/common/database/migrate-locked';
import { createFreshDatabase } from '../helpers/test-app';

// Late in a full embedded run this start (or fresh migration) took over 60 s (load 8, a 2.3 GB jest
// process): the bound is 180 s; a hang still fails.
jest.setTimeout(180_000);

/** Two nodes starting at once on one fresh database: migrations run once, neither fails. */
describe('migrations under an advisory lock', () => {
  it('concurrent migrators apply every migration exactly once', async () => {
    const db = await createFreshDatabase();
    const dir = mkdtempSync(join(tmpdir(), 'agent-api-mig-'));
    const embedded = db ? null : new EmbeddedPostgres(dir, 8);
    const url = db ? db.url : await embedded!.start();
    const a = new DataSource({ ...dataSourceOptions(url, 3) });
    const b = new DataSource({ ...dataSourceOptions(url, 3) });
    try {
      await Promise.all([a.initialize(), b.initialize()]);
      const [ra, rb] = await Promise.all([runMigrationsLocked(a), runMigrationsLocked(b)]);
      expect(ra.length + rb.length).toBe(MIGRATIONS.length);
      expect(Math.min(ra.length, rb.length)).toBe(0);
      const rows: Array<{ n: string }> = await a.query('SELECT count(*) AS n FROM migrations');
      expect(Number(rows[0].n)).toBe(MIGRATIONS.length);
    } finally {
      await a.destroy().catch(() => undefined);
      await b.destroy().catch(() => undefined);
      if (embedded) await embedded.stop();
      if (db) await db.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
