import { randomUUID } from 'node:crypto';

export interface Api {
  base: string;
  key: string;
  call<T = any>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: T }>;
}

export function api(base: string, key: string): Api {
  return {
    base,
    key,
    async call(method, path, body, headers = {}) {
      const res = await fetch(base + path, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...(method === 'POST' ? { 'idempotency-key': randomUUID() } : {}),
          ...headers,
        },
        body: body !== undefined ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      let parsed: any = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        // not JSON
      }
      return { status: res.status, body: parsed };
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
