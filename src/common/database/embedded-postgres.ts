import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { lockDataDir } from './data-dir-lock';
import { PGliteQueryQueue } from './pglite-query-queue';

/**
 * The embedded default database: PostgreSQL compiled to WASM (PGlite), served inside this
 * process on an ephemeral loopback port, so the app talks to it with the same `pg` driver and
 * the same migrations as to a real server. Data lives in `<dataDir>/pglite`, opened by one
 * process at a time (`<dataDir>/pglite.lock`, see lockDataDir).
 */
export class EmbeddedPostgres {
  private readonly logger = new Logger('EmbeddedPostgres');
  private db: PGlite | null = null;
  private server: PGLiteSocketServer | null = null;
  private releaseLock: (() => void) | null = null;
  url: string | null = null;

  constructor(
    private readonly dataDir: string | null,
    private readonly maxConnections: number,
  ) {}

  async start(): Promise<string> {
    let dir: string | undefined;
    if (this.dataDir) {
      dir = join(this.dataDir, 'pglite');
      mkdirSync(dir, { recursive: true });
      this.releaseLock = lockDataDir(this.dataDir);
    }
    try {
      this.db = await PGlite.create(dir ? { dataDir: dir } : {});
    } catch (err) {
      this.releaseLock?.();
      this.releaseLock = null;
      throw err;
    }
    this.server = new PGLiteSocketServer({ db: this.db, host: '127.0.0.1', port: 0, maxConnections: this.maxConnections });
    // The server's own queue interleaves extended-protocol messages of different connections
    // (electric-sql/pglite#1046): swap in one that keeps each exchange together.
    (this.server as unknown as { queryQueue: PGliteQueryQueue }).queryQueue = new PGliteQueryQueue(this.db);
    await this.server.start();
    const conn = this.server.getServerConn(); // "127.0.0.1:PORT"
    this.url = `postgres://postgres:postgres@${conn}/postgres`;
    this.logger.debug(`embedded PostgreSQL (PGlite) ${dir ? `in ${dir}` : 'in memory'} on ${conn}`);
    return this.url;
  }

  async stop(): Promise<void> {
    const server = this.server;
    const db = this.db;
    this.server = null;
    this.db = null;
    if (server) await server.stop().catch(() => undefined);
    if (db) await db.close().catch(() => undefined);
    this.releaseLock?.();
    this.releaseLock = null;
  }
}
