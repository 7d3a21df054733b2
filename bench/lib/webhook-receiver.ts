import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/**
 * A webhook receiver on loopback for the benchmarks: verifies every delivery with the
 * `standardwebhooks` package (400 when it does not verify), answers 200 otherwise, and keeps
 * counts, the distinct webhook-ids and, per delivery, receipt time - the event's `created_at`.
 */
export class BenchReceiver {
  secret: string | null = null;
  readonly ids = new Set<string>();
  received = 0;
  invalid = 0;
  /** ms from the event's created_at to its first receipt. */
  readonly latencies: number[] = [];
  firstAt = NaN;
  lastAt = NaN;
  private server: Server | null = null;
  private port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        try {
          if (!this.secret) throw new Error('no secret');
          const payload = new Webhook(this.secret).verify(body, req.headers as Record<string, string>) as { id: string; created_at: string };
          const now = Date.now();
          this.received++;
          if (!this.ids.has(payload.id)) {
            this.ids.add(payload.id);
            this.latencies.push(now - Date.parse(payload.created_at));
          }
          if (Number.isNaN(this.firstAt)) this.firstAt = performance.now();
          this.lastAt = performance.now();
          res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
        } catch {
          this.invalid++;
          res.writeHead(400).end('bad signature');
        }
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', () => resolve()));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
}
