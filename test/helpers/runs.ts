import { TestApp } from './test-app';

let keyCounter = 0;

/** `!script` text for the scripted model (CONTRACT section 9). */
export const script = (turns: unknown[]) => `!script ${JSON.stringify(turns)}`;

export function userInput(text: string) {
  return { role: 'user', content: [{ type: 'text', text }] };
}

/** POST /v1/sessions/{id}/runs with a fresh Idempotency-Key. */
export function startRun(t: TestApp, key: string, sessionId: string, body: Record<string, unknown>, idemKey = `k-${Date.now()}-${++keyCounter}`) {
  return t.call(key, 'POST', `/v1/sessions/${sessionId}/runs`, body, { 'idempotency-key': idemKey });
}

export async function createSession(t: TestApp, key: string, body: Record<string, unknown> = {}): Promise<string> {
  const s = await t.call(key, 'POST', '/v1/sessions', body);
  if (s.status !== 201) throw new Error(`session create failed: ${s.status} ${s.text}`);
  return s.body.id;
}

/** Polls GET /v1/runs/{id} until `pred` holds. */
export async function waitForRun(t: TestApp, key: string, runId: string, pred: (r: any) => boolean, ms = 20000): Promise<any> {
  const until = Date.now() + ms;
  for (;;) {
    const r = await t.call(key, 'GET', `/v1/runs/${runId}`);
    if (r.status === 200 && pred(r.body)) return r.body;
    if (Date.now() > until) throw new Error(`timeout waiting for run ${runId}: ${r.text}`);
    await new Promise((res) => setTimeout(res, 40));
  }
}

export const isTerminal = (r: any) => ['completed', 'failed', 'cancelled', 'expired', 'terminated'].includes(r.status);

/** Every event of a run through the JSON pages. */
export async function runEvents(t: TestApp, key: string, runId: string): Promise<any[]> {
  const out: any[] = [];
  let after = 0;
  for (;;) {
    const page = await t.call(key, 'GET', `/v1/runs/${runId}/events?after=${after}&limit=1000`);
    if (page.status !== 200) throw new Error(`events: ${page.status} ${page.text}`);
    out.push(...page.body.data);
    if (!page.body.has_more) return out;
    after = out[out.length - 1].sequence;
  }
}

/** Checks the ordering rules of CONTRACT section 8 on one run's events; returns the problems. */
export function contractOrderProblems(events: any[]): string[] {
  const problems: string[] = [];
  events.forEach((e, i) => {
    if (e.sequence !== i + 1) problems.push(`sequence ${e.sequence} at position ${i + 1}`);
  });
  const finished = events.filter((e) => e.type === 'run.finished');
  if (finished.length !== 1) problems.push(`${finished.length} run.finished events`);
  if (events.length && events[events.length - 1].type !== 'run.finished') problems.push('run.finished is not last');
  const started = events.findIndex((e) => e.type === 'run.started');
  if (started > 0) problems.push('run.started is not first');
  const usageIdx = events.map((e) => e.type).lastIndexOf('usage');
  if (usageIdx === -1 || usageIdx > events.length - 2) problems.push('usage is not right before run.finished');
  const seen = new Map<string, Set<string>>();
  const open = new Map<string, string>();
  const text = new Map<string, string>();
  for (const e of events) {
    const d = e.data;
    if (e.type.startsWith('tool.')) {
      const s = seen.get(d.tool_call_id) ?? new Set<string>();
      if ((e.type === 'tool.completed' || e.type === 'tool.failed') && !(s.has('tool.requested') && s.has('tool.started'))) {
        problems.push(`${e.type} of ${d.tool_call_id} before requested/started`);
      }
      s.add(e.type);
      seen.set(d.tool_call_id, s);
    }
    if (e.type === 'message.started') {
      open.set(d.message_id, 'open');
      text.set(d.message_id, '');
    }
    if (e.type === 'message.delta') {
      if (open.get(d.message_id) !== 'open') problems.push(`delta outside its message ${d.message_id}`);
      text.set(d.message_id, (text.get(d.message_id) ?? '') + d.delta);
    }
    if (e.type === 'message.completed') {
      if (open.get(d.message_id) !== 'open') problems.push(`message.completed without message.started ${d.message_id}`);
      open.set(d.message_id, 'done');
      const full = (d.content ?? []).filter((p: any) => p.type === 'text').map((p: any) => p.text).join('');
      if (full !== text.get(d.message_id)) problems.push(`deltas of ${d.message_id} do not concatenate to its text`);
    }
  }
  for (const [id, state] of open) if (state !== 'done') problems.push(`message ${id} never completed`);
  return problems;
}
