import { randomUUID } from 'node:crypto';
import { Agent, request } from 'node:http';

export interface Api {
  base: string;
  key: string;
  call<T = any>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: T }>;
}

/**
 * The load generators' HTTP client: node:http with a keep-alive agent. (Not fetch: undici's
 * fetch cost the B1 client process ~3 ms of CPU per run on the same 2 cores the service runs on,
 * about a sixth of the machine at 60-80 runs/s; plain node:http costs a fraction of that.)
 */
export function api(base: string, key: string): Api {
  const url = new URL(base);
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  return {
    base,
    key,
    call(method, path, body, headers = {}) {
      const payload = body !== undefined ? JSON.stringify(body) : undefined;
      return new Promise((resolve, reject) => {
        const req = request(
          {
            host: url.hostname,
            port: url.port,
            method,
            path,
            agent,
            headers: {
              authorization: `Bearer ${key}`,
              ...(payload !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}),
              ...(method === 'POST' ? { 'idempotency-key': randomUUID() } : {}),
              ...headers,
            },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => {
              const text = Buffer.concat(chunks).toString('utf8');
              let parsed: any = text;
              try {
                parsed = text ? JSON.parse(text) : undefined;
              } catch {
                // not JSON
              }
              resolve({ status: res.statusCode ?? 0, body: parsed });
            });
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.setTimeout(60_000, () => req.destroy(new Error(`${method} ${path}: no answer in 60 s`)));
        req.end(payload);
      });
    },
  };
}

/** A scripted user input (CONTRACT section 9). */
export function script(turns: unknown[]): { role: 'user'; content: Array<{ type: 'text'; text: string }> } {
  return { role: 'user', content: [{ type: 'text', text: `!script ${JSON.stringify(turns)}` }] };
}

export async function createSession(a: Api, agentId = 'assistant'): Promise<string> {
  const r = await a.call('POST', '/v1/sessions', { agent_id: agentId });
  if (r.status !== 201) throw new Error(`create session: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.id;
}

export async function startRun(a: Api, sessionId: string, turns: unknown[], extra: Record<string, unknown> = {}): Promise<string> {
  const r = await a.call('POST', `/v1/sessions/${sessionId}/runs`, { input: script(turns), ...extra });
  if (r.status !== 202) throw new Error(`create run: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
  return r.body.run_id;
}
