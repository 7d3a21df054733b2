import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MIGRATIONS } from '../../migrations';
import { runMigrations } from '../../src/cli/migrate';
import { createFreshDatabase } from '../helpers/test-app';

// Late in a full embedded run this start (or fresh migration) took over 60 s (load 8, a 2.3 GB jest
// process): the bound is 180 s; a hang still fails.
jest.setTimeout(180_000);

describe('npm run migration:run (src/cli/migrate.ts)', () => {
  it('applies every migration to a fresh database once, then nothing', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'agent-api-migrate-'));
    const db = await createFreshDatabase();
    const env = { DATA_DIR: dataDir, LOG_LEVEL: 'fatal', ...(db ? { DATABASE_URL: db.url } : {}) };
    try {
      const first = await runMigrations(env);
      expect(first).toEqual(MIGRATIONS.map((M) => new M().name ?? M.name));
      await expect(runMigrations(env)).resolves.toEqual([]);
    } finally {
      if (db) await db.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('rejects an invalid configuration before touching any database', async () => {
    await expect(runMigrations({ DATABASE_URL: 'mysql://nope', LOG_LEVEL: 'fatal' })).rejects.toThrow(/DATABASE_URL/);
  });
});
