import { ChildProcess, spawn } from 'node:child_process';
import { createConnection, createServer } from 'node:net';

/** A `nats-server` child process of the test (Debian package nats-server), to stop and restart. */
export interface NatsServer {
  url: string;
  port: number;
  /** SIGKILL; resolves once the process is gone. */
  kill(): Promise<void>;
  /** Starts it again on the same port; resolves once it accepts connections. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => res(port));
    });
  });
}

function accepts(port: number): Promise<boolean> {
  return new Promise((res) => {
    const c = createConnection({ host: '127.0.0.1', port });
    c.once('connect', () => {
      c.destroy();
      res(true);
    });
    c.once('error', () => res(false));
  });
}

export async function startNatsServer(): Promise<NatsServer> {
  const port = await freePort();
  let child: ChildProcess | null = null;
  const launch = async () => {
    const c = spawn(process.env.NATS_SERVER_BIN ?? 'nats-server', ['-a', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
    child = c;
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (c.exitCode !== null) throw new Error(`nats-server exited with ${c.exitCode} (is the Debian package nats-server installed?)`);
      if (await accepts(port)) return;
      if (Date.now() > deadline) throw new Error(`nats-server did not accept connections on ${port} within 10 s`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const kill = async () => {
    const c = child;
    child = null;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const gone = new Promise<void>((r) => c.once('exit', () => r()));
    c.kill('SIGKILL');
    await gone;
  };
  await launch();
  return { url: `nats://127.0.0.1:${port}`, port, kill, restart: launch, stop: kill };
}
