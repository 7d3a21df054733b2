import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runMigrations } from '../../src/cli/migrate';

const ROOT = join(__dirname, '..', '..');

/**
 * A migrated embedded database (PGlite data directory) to copy into each test app's DATA_DIR, so
 * an embedded test app does not apply every migration to a fresh WASM database at start-up (most
 * of an embedded app's start: ~60 s fresh vs ~14 s migrated for `node dist/src/main.js` at load 10).
 * The template is made by the migrate CLI's own function (what `npm run migration:run` does: no app
 * boot, so no rows but the schema's), keyed by the content of every migration and the PGlite
 * version, kept in the OS temp dir and replaced when either changes. The migration tests
 * themselves (test/integration/migrat*) start from empty databases, not from this.
 */
export async function embeddedTemplate(): Promise<string> {
  const h = createHash('sha256');
  const dir = join(ROOT, 'migrations');
  for (const f of readdirSync(dir).sort()) h.update(f).update(readFileSync(join(dir, f)));
  h.update(readFileSync(join(ROOT, 'node_modules', '@electric-sql', 'pglite', 'package.json')));
  const target = join(tmpdir(), `agent-api-pglite-template-${h.digest('hex').slice(0, 16)}`);
  if (existsSync(join(target, 'PG_VERSION'))) return target;
  const work = mkdtempSync(join(tmpdir(), 'agent-api-pglite-template-work-'));
  try {
    await runMigrations({ DATA_DIR: work, LOG_LEVEL: 'fatal' });
    try {
      renameSync(join(work, 'pglite'), target);
    } catch (err) {
      // Another process made it first: theirs is the same.
      if (!existsSync(join(target, 'PG_VERSION'))) throw err;
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return target;
}

/** Puts a copy of the migrated template where an embedded app under `dataDir` keeps its database. */
export async function seedEmbeddedDatabase(dataDir: string): Promise<void> {
  cpSync(await embeddedTemplate(), join(dataDir, 'pglite'), { recursive: true });
}
