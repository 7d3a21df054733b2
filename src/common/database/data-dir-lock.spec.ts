import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataDirInUseError, lockDataDir } from './data-dir-lock';

/** A real other process: alive until killed. */
function otherProcess(): { pid: number; stop: () => Promise<void> } {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  return {
    pid: child.pid!,
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
}

describe('lockDataDir (one process per embedded database)', () => {
  let dir: string;
  const lockFile = () => join(dir, 'pglite.lock');
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'agent-api-lock-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('takes the lock with this process id and releases it', () => {
    const release = lockDataDir(dir);
    expect(readFileSync(lockFile(), 'utf8').trim()).toBe(String(process.pid));
    release();
    expect(existsSync(lockFile())).toBe(false);
  });

  it('refuses while another live process holds it, naming that process; takes it over once that process is gone (kill -9)', async () => {
    const other = otherProcess();
    try {
      writeFileSync(lockFile(), `${other.pid}\n`);
      expect(() => lockDataDir(dir)).toThrow(DataDirInUseError);
      expect(() => lockDataDir(dir)).toThrow(`in use by process ${other.pid}`);
      expect(readFileSync(lockFile(), 'utf8').trim()).toBe(String(other.pid));
    } finally {
      await other.stop();
    }
    const release = lockDataDir(dir);
    expect(readFileSync(lockFile(), 'utf8').trim()).toBe(String(process.pid));
    release();
  });

  it('takes over a lock file that names no process', () => {
    writeFileSync(lockFile(), 'garbage\n');
    lockDataDir(dir)();
    expect(existsSync(lockFile())).toBe(false);
  });

  it("a release does not remove another process's lock", async () => {
    const release = lockDataDir(dir);
    const other = otherProcess();
    try {
      writeFileSync(lockFile(), `${other.pid}\n`); // taken over meanwhile
      release();
      expect(readFileSync(lockFile(), 'utf8').trim()).toBe(String(other.pid));
    } finally {
      await other.stop();
    }
  });
});
