import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface ReceivedWebhook {
  webhookId: string;
  timestamp: string;
  /** The verified, parsed body. */
  payload: any;
  /** What the receiver answered. */
  status: number;
  /** When it arrived (`Date.now()`, once the body was read and verified). */
  receivedAt: number;
}

/**
 * A real HTTP receiver on loopback that verifies every delivery with the `standardwebhooks`
 * package: a request that does not verify is answered 400 and counted in `invalid`.
 * `answer(n)` decides the status of the n-th verified request (1-based; default 200), or `'hold'`:
 * no answer at all (the request stays open until the sender gives up or dies), listed in `held`.
 */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  readonly invalid: string[] = [];
  /** Verified requests answered `'hold'` (never answered). */
  readonly held: Array<{ webhookId: string; payload: any }> = [];
  /** Held requests still open (the sender has not given up yet), and the most open at once. */
  holding = 0;
  maxHolding = 0;
  secret: string | null = null;
  answer: (n: number, payload: any) => number | 'hold' = () => 200;
  private server: Server | null = null;
  port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  async start(port = 0): Promise<this> {
    const server = createServer((req, res) => {
      void readBody(req).then((body) => {
        try {
          if (!this.secret) throw new Error('no secret yet');
          const payload = new Webhook(this.secret).verify(body, req.headers as Record<string, string>);
          const status = this.answer(this.received.length + 1, payload);
          if (status === 'hold') {
            this.held.push({ webhookId: String(req.headers['webhook-id']), payload });
            this.holding++;
            this.maxHolding = Math.max(this.maxHolding, this.holding);
            res.on('close', () => this.holding--);
            return;
          }
          this.received.push({ webhookId: String(req.headers['webhook-id']), timestamp: String(req.headers['webhook-timestamp']), payload, status, receivedAt: Date.now() });
          res.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : 'try again');
        } catch (err) {
          this.invalid.push(`${(err as Error).message}: ${body.slice(0, 200)}`);
          res.writeHead(400).end('bad signature');
        }
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  /** The verified deliveries (2xx answered or not) of one event type about one object. */
  of(type: string, objectId: string): ReceivedWebhook[] {
    return this.received.filter((r) => r.payload.type === type && r.payload.data?.object?.id === objectId);
  }

  async waitFor(type: string, objectId: string, pred: (all: ReceivedWebhook[]) => boolean = (a) => a.some((r) => r.status < 300), ms = 20_000): Promise<ReceivedWebhook[]> {
    const until = Date.now() + ms;
    for (;;) {
      const got = this.of(type, objectId);
      if (pred(got)) return got;
      if (Date.now() > until) {
        throw new Error(`no ${type} for ${objectId} within ${ms} ms; got ${JSON.stringify(this.received.map((r) => [r.payload.type, r.payload.data?.object?.id, r.status]))}; invalid ${JSON.stringify(this.invalid)}`);
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
