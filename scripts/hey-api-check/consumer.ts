/**
 * Compiled with `tsc --strict` against a client that @hey-api/openapi-ts generated from
 * clients/ts/openapi.json (scripts/hey-api-check/run.sh): events and content parts are typed by
 * the document alone, with no hand-written event type. Not part of the project's own build.
 */
import { client } from './generated/client.gen';
import { eventsRunEvents, runsCreate, sessionsCreate } from './generated/sdk.gen';
import type { ContentPart, RunEvent, RunEventListResponseDto } from './generated/types.gen';

/** Narrowing on `type` gives each event's own `data`; the switch must cover every type. */
export function describe(e: RunEvent): string {
  switch (e.type) {
    case 'run.started':
    case 'run.resumed':
      return e.data.status;
    case 'run.waiting':
      return `${e.data.status}: ${e.data.reason}`;
    case 'run.cancel_requested':
      return e.data.requested_by;
    case 'run.input':
      return e.data.message_id;
    case 'run.input_requested':
      return `${e.data.tool_call_id}: ${e.data.question} (until ${new Date(e.data.expires_at).toISOString()})`;
    case 'agent.handoff':
      return `${e.data.from_agent} -> ${e.data.to_agent} (${e.data.reason ?? ''}) ${e.data.tool_call_id}`;
    case 'subagent.created':
      return `${e.data.subagent_id} ${e.data.name} ${e.data.agent_id} ${e.data.run_id} ${e.data.tool_call_id}`;
    case 'subagent.completed':
      return `${e.data.subagent_id} ${e.data.run_id} ${e.data.status}`;
    case 'subagent.closed':
      return e.data.subagent_id;
    case 'message.started':
      return `${e.data.message_id} ${e.data.role}`;
    case 'message.delta':
      return e.data.delta.slice(0, e.data.content_index + 10);
    case 'message.completed':
      return e.data.content.map(part).join('');
    case 'tool.requested':
      return `${e.data.tool_name} ${e.data.risk}`;
    case 'tool.started':
      return `${e.data.tool_call_id} attempt ${e.data.attempt.toFixed(0)}`;
    case 'tool.completed':
      return `${e.data.tool_name} ${e.data.duration_ms.toFixed(0)} ms`;
    case 'tool.failed':
      return `${e.data.error.code} ${typeof e.data.error.message === 'string' ? e.data.error.message : 'redacted'}`;
    case 'approval.requested':
      return `${e.data.approval_id} until ${new Date(e.data.expires_at).toISOString()}`;
    case 'approval.accepted':
    case 'approval.rejected':
      return `${e.data.decided_by}: ${e.data.reason ?? ''}`;
    case 'usage':
      return String(e.data.input_tokens + e.data.output_tokens + e.data.cached_input_tokens + e.data.model_calls + e.data.tool_calls);
    case 'run.finished':
      return `${e.data.status} ${e.data.termination_reason ?? ''} ${e.data.error?.code ?? ''} ${e.data.final_message_id ?? ''} ${e.data.usage.output_tokens}`;
    default: {
      const unknownType: never = e;
      return unknownType;
    }
  }
}

function part(p: ContentPart): string {
  switch (p.type) {
    case 'text':
      return p.text;
    case 'attachment_ref':
      return p.attachment_id;
    case 'tool_call':
      return `${p.tool_name}(${JSON.stringify(p.arguments)})`;
    case 'tool_result':
      return p.ok ? JSON.stringify(p.result) : (p.error?.code ?? '');
    default: {
      const unknownPart: never = p;
      return unknownPart;
    }
  }
}

/** The generated SDK end to end: a session, a run, its first page of events. */
export async function demo(baseUrl: string, apiKey: string): Promise<string[]> {
  client.setConfig({ baseUrl, headers: { authorization: `Bearer ${apiKey}` } });
  const session = await sessionsCreate({ body: { title: 'typed' }, throwOnError: true });
  const run = await runsCreate({
    path: { id: session.data.id },
    headers: { 'Idempotency-Key': crypto.randomUUID() },
    body: { input: { role: 'user', content: [{ type: 'text', text: 'hi' }] } },
    throwOnError: true,
  });
  const runId = 'run_id' in run.data ? run.data.run_id : run.data.id;
  const page = await eventsRunEvents({ path: { id: runId }, throwOnError: true });
  // 204: the stream is finished and the cursor is at its end (SSE only); JSON pages are 200.
  if (!page.data) return [];
  const body: RunEventListResponseDto = page.data;
  return body.data.map(describe);
}
