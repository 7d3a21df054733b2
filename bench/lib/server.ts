import { ChildProcess, spawn } from 'node:child_process';
import { createFreshDatabase } from '../../test/helpers/fresh-database';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { log, sleep } from './util';

export interface Proc {
  name: string;
  child: ChildProcess;
  pid: number;
  url: string;
  stderrTail: () => string;
  stop(): Promise<void>;
}

/** Resident set size of a process in bytes, from /proc/<pid>/status (VmRSS). */
export function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

/** Total CPU time (user + system) of a process in ms, from /proc/<pid>/stat. */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return ticks * 10; // CLK_TCK = 100 on Linux
}

/**
 * Total CPU time in ms of the PostgreSQL backends connected to the database of `dbUrl` (their
 * pids from pg_stat_activity, read in /proc: the server runs on this machine). Backends that end
 * between two readings take their time with them: compare readings over a window in which the
 * service's pool stays open.
 */
export async function dbBackendsCpuMs(dbUrl: string): Promise<number> {
  const c = new Client({ connectionString: dbUrl });
  await c.connect();
  try {
    const { rows } = await c.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`);
    let total = 0;
    for (const { pid } of rows) {
      try {
        total += cpuMs(pid);
      } catch {
        // the backend ended meanwhile
      }
    }
    return total;
  } finally {
    await c.end();
  }
}

/** TCP ports a process listens on (its socket inodes matched against /proc/net/tcp). */
export function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]);
    } catch {
      // the fd closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const cols = line.trim().split(/\s+/);
    if (cols.length < 10 || cols[3] !== '0A') continue; // 0A = LISTEN
    if (inodes.has(cols[9])) ports.push(parseInt(cols[1].split(':')[1], 16));
  }
  return ports;
}

/** Spawns `node <args>` with `env`, waits until `readyPath` answers 200 (bounded), returns the handle. */
export async function startProcess(name: string, args: string[], env: Record<string, string>, port: number, readyPath: string, timeoutMs = 90_000): Promise<Proc> {
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let tail = '';
  child.stderr!.on('data', (b: Buffer) => {
    tail = (tail + b.toString('utf8')).slice(-4000);
  });
  let exited = false;
  const exitedP = new Promise<void>((r) => child.once('exit', () => ((exited = true), r())));
  const url = `http://127.0.0.1:${port}`;
  const t0 = Date.now();
  for (;;) {
    if (exited) throw new Error(`${name} exited during start-up: ${tail}`);
    if (Date.now() - t0 > timeoutMs) {
      child.kill('SIGKILL');
      throw new Error(`${name} not ready within ${timeoutMs} ms: ${tail}`);
    }
    try {
      const res = await fetch(url + readyPath);
      await res.arrayBuffer();
      if (res.status === 200) break;
    } catch {
      // not listening yet
    }
    await sleep(200);
  }
  log(`${name} ready (pid ${child.pid}) in ${Date.now() - t0} ms`);
  return {
    name,
    child,
    pid: child.pid!,
    url,
    stderrTail: () => tail,
    stop: async () => {
      if (exited) return;
      child.kill('SIGTERM');
      const killed = await Promise.race([exitedP.then(() => true), sleep(12_000).then(() => false)]);
      if (!killed) {
        child.kill('SIGKILL');
        await exitedP;
      }
    },
  };
}

/** A fresh database on the PostgreSQL server at `base` (created now, dropped by `drop`). */
export async function freshDatabase(base: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const db = await createFreshDatabase('agent_api_bench_', base);
  if (!db) throw new Error('a PostgreSQL URL is required');
  return db;
}

export const DIST = join(__dirname, '..', '..');
