import { spawnSync } from 'node:child_process';

/**
 * What a suite needs beyond Node and the database, checked when the suite is collected: a suite
 * that cannot reach it fails at once with one line saying what to start, instead of timing out
 * hook by hook. The error carries no stack (Jest then prints the line alone).
 */
export class MissingRequirement extends Error {
  constructor(line: string) {
    super(line);
    this.name = 'MissingRequirement';
    this.stack = line;
  }
}

/** Whether something accepts TCP connections on host:port within 2 s (synchronous: a child node probes it). */
export function tcpReachable(host: string, port: number): boolean {
  const probe = spawnSync(
    process.execPath,
    ['-e', `const s=require('net').connect({host:${JSON.stringify(host)},port:${port}});s.setTimeout(2000,()=>process.exit(1));s.on('connect',()=>process.exit(0));s.on('error',()=>process.exit(1));`],
    { stdio: 'ignore', timeout: 5000 },
  );
  return probe.status === 0;
}

/** The Redis of TEST_REDIS_URL (default redis://127.0.0.1:6379), or a MissingRequirement. */
export function requireRedis(): string {
  const url = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
  const u = new URL(url);
  const host = u.hostname || '127.0.0.1';
  const port = Number(u.port || 6379);
  if (!tcpReachable(host, port)) {
    throw new MissingRequirement(
      `this suite needs Redis at ${host}:${port} and nothing answers there: start one (\`redis-server --port ${port} --save ''\`, Debian package redis-server), or point TEST_REDIS_URL at yours`,
    );
  }
  return url;
}

/** The nats-server binary (NATS_SERVER_BIN, default `nats-server` on PATH), or a MissingRequirement. */
export function requireNatsServerBinary(): string {
  const bin = process.env.NATS_SERVER_BIN ?? 'nats-server';
  const res = spawnSync(bin, ['--version'], { stdio: 'ignore', timeout: 10_000 });
  if (res.error || res.status !== 0) {
    throw new MissingRequirement(
      `this suite starts its own nats-server and cannot run ${JSON.stringify(bin)} (${res.error ? (res.error as NodeJS.ErrnoException).code : `exit ${res.status}`}): install it (Debian package nats-server, or a release from nats.io), or set NATS_SERVER_BIN to its path`,
    );
  }
  return bin;
}
