import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Thrown when another live process holds the embedded database of a DATA_DIR. */
export class DataDirInUseError extends Error {}

const LOCK_FILE = 'pglite.lock';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function holderOf(file: string): number | null {
  try {
    const pid = Number(readFileSync(file, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/**
 * Takes `<dataDir>/pglite.lock` for this process, as PostgreSQL's `postmaster.pid` does for a
 * data directory: PGlite itself does not, and two processes opening the same files (a second
 * `npm start`, or `npm run migration:run` beside a running server) overwrite each other's pages.
 * A lock left by a process that is gone (`kill -9`, a crash) is taken over; one held by a live
 * process other than this one is refused with DataDirInUseError. Returns the release function,
 * which removes the file only while it is still this process's.
 */
export function lockDataDir(dataDir: string): () => void {
  const file = join(dataDir, LOCK_FILE);
  const release = () => {
    if (holderOf(file) === process.pid) rmSync(file, { force: true });
  };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      return release;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = holderOf(file);
    if (holder === process.pid) return release;
    if (holder !== null && alive(holder)) {
      throw new DataDirInUseError(
        `DATA_DIR ${dataDir} is in use by process ${holder} (${file}): one process at a time may open its embedded database. ` +
          `Stop that process, use another DATA_DIR, or set DATABASE_URL; if ${holder} is not this service, delete ${file}.`,
      );
    }
    rmSync(file, { force: true }); // left by a process that is gone
  }
  throw new DataDirInUseError(`could not take ${file}: another process keeps taking it`);
}
