import { Body, Controller, HttpCode, Optional, Param, Post, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiParam, ApiProduces, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CurrentPrincipal } from '../../../common/auth/auth.decorators';
import { Principal } from '../../../common/auth/principal';
import { RequestAuditWriter } from '../../../common/audit/request-audit-writer';
import { ApiErrors } from '../../../common/errors/error.dto';
import { ApiJsonBody } from '../../../common/http/api-docs.decorators';
import { SseFrame } from '../../events/api/sse';
import { CompatSse, writeFrames } from '../../compat-shared/compat-sse';
import { audienceOf, FeedStep, SessionEventFeed } from '../../compat-shared/session-event-feed';
import { AgUiRunsService } from '../application/ag-ui-runs.service';
import { AgUiEvent } from '../domain/ag-ui-event-mapper';
import { AgUiRunStream } from '../domain/ag-ui-run-stream';
import { AgUiMessage } from '../domain/ag-ui-input';
import { RunAgentInputDto } from './run-agent-input.dto';

const WIRE_EXAMPLE = [
  'data: {"type":"RUN_STARTED","timestamp":1735787045678,"threadId":"support-thread-1","runId":"r-1","protocolVersion":"1.0"}',
  '',
  'data: {"type":"STEP_STARTED","timestamp":1735787045690,"stepName":"turn_1"}',
  '',
  'data: {"type":"TEXT_MESSAGE_START","timestamp":1735787045701,"messageId":"msg_01JD2Z4Q8M3K7P6W9X0Y1Z2A3E","role":"assistant"}',
  '',
  'data: {"type":"TEXT_MESSAGE_CONTENT","timestamp":1735787045702,"messageId":"msg_01JD2Z4Q8M3K7P6W9X0Y1Z2A3E","delta":"Let me check order O-1001."}',
  '',
  'data: {"type":"TEXT_MESSAGE_END","timestamp":1735787045750,"messageId":"msg_01JD2Z4Q8M3K7P6W9X0Y1Z2A3E"}',
  '',
  'data: {"type":"TOOL_CALL_START","timestamp":1735787045751,"toolCallId":"call_01JD2Z4Q8M3K7P6W9X0Y1Z2A3F","toolCallName":"get_order","parentMessageId":"msg_01JD2Z4Q8M3K7P6W9X0Y1Z2A3E"}',
  '',
  'data: {"type":"TOOL_CALL_ARGS","timestamp":1735787045751,"toolCallId":"call_01JD2Z4Q8M3K7P6W9X0Y1Z2A3F","delta":"{\\"order_id\\":\\"O-1001\\"}"}',
  '',
  'data: {"type":"TOOL_CALL_END","timestamp":1735787045751,"toolCallId":"call_01JD2Z4Q8M3K7P6W9X0Y1Z2A3F"}',
  '',
  'data: {"type":"STEP_FINISHED","timestamp":1735787045760,"stepName":"turn_1"}',
  '',
  'data: {"type":"TOOL_CALL_RESULT","timestamp":1735787045790,"messageId":"call_01JD2Z4Q8M3K7P6W9X0Y1Z2A3F_result","toolCallId":"call_01JD2Z4Q8M3K7P6W9X0Y1Z2A3F","content":"{\\"status\\":\\"delayed\\"}","role":"tool"}',
  '',
  '...',
  '',
  'data: {"type":"RUN_FINISHED","timestamp":1735787046001,"threadId":"support-thread-1","runId":"r-1","outcome":{"type":"interrupt","interrupts":[{"id":"apr_01JD2Z4Q8M3K7P6W9X0Y1Z2A3G","reason":"tool_approval","message":"Approve the call of create_ticket?","toolCallId":"call_01JD2Z4Q8M3K7P6W9X0Y1Z2A3H","expiresAt":"2025-01-02T04:04:05.678Z","metadata":{"tool_name":"create_ticket","run_id":"run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3C"}}]}}',
  '',
].join('\n');

/** How long a run's events wait for a subagent's own end once the run learnt it (the two streams race). */
const SUBAGENT_WAIT_MS = 3000;

const EVENT_TABLE = [
  '| AG-UI event | from our events | fields |',
  '|---|---|---|',
  '| `RUN_STARTED` | (first, always) | `threadId`, `runId` (the request\'s), `protocolVersion: "1.0"` |',
  '| `STEP_STARTED` / `STEP_FINISHED` | an assistant `message.started` ... the turn\'s `message.completed` and `tool.requested` | `stepName: "turn_<n>"` |',
  '| `TEXT_MESSAGE_START` / `CONTENT` / `END` | `message.delta`s / `message.completed` of the assistant message | `messageId` (our `msg_...`), `role: "assistant"`, `delta` |',
  '| `TOOL_CALL_START` / `ARGS` / `END` | `tool.requested` | `toolCallId` (our `call_...`), `toolCallName`, `parentMessageId`, `delta` (the arguments as JSON text; members: private tools redacted) |',
  '| `TOOL_CALL_RESULT` | `tool.completed` / `tool.failed` | `toolCallId`, `messageId: "<toolCallId>_result"`, `content` (the result, or `{"error": ...}`, as JSON text), `role: "tool"` |',
  '| `RUN_FINISHED` | `run.waiting` (approval) | `outcome: {type: "interrupt", interrupts: [{id: <approval_id>, reason: "tool_approval", toolCallId, expiresAt, message, metadata: {tool_name, run_id}}]}` |',
  '| `RUN_FINISHED` | `run.waiting` (client tool) | `outcome: {type: "success", pendingToolCallIds}` |',
  '| `RUN_FINISHED` | `run.finished` completed / cancelled | `outcome: {type: "success"}` / `{type: "cancelled"}` |',
  '| `RUN_ERROR` | `run.finished` failed / expired / terminated | `code` (our run error code, e.g. `model_timeout`, or `terminated_<reason>`), `message` |',
  '| `SUBAGENT_STARTED` | `subagent.created`, or `send_subagent_input` starting a subagent\'s next run (CONTRACT 16) | `subagentRunId` (the subagent\'s run id: one per invocation), `name`, `parentToolCallId`; `parentSubagentRunId` for a subagent\'s own subagent |',
  '| (the subagent\'s events) | the subagent run\'s own events, followed from its start | every `STEP_*`, `TEXT_MESSAGE_*`, `TOOL_CALL_*` carries its `subagentRunId` |',
  '| `SUBAGENT_FINISHED` | the subagent\'s `run.finished` completed | `outcome: {type: "success"}`, `result` (its final text); `outcome: {type: "suspended"}` when the AG-UI run ends while the subagent still works (it goes on natively) |',
  '| `SUBAGENT_ERROR` | the subagent\'s `run.finished` failed / cancelled / expired / terminated | `code`, `message` (the AG-UI run goes on: the parent reads the failure from `wait_for_subagents`) |',
].join('\n');

/**
 * AG-UI 1.0 (CONTRACT section 15): `POST /ag-ui/agents/{agent_id}` with a `RunAgentInput`
 * answers an SSE stream of AG-UI events over one of our durable runs. The request is taken
 * (run created, approvals decided, tool outputs submitted) before the stream opens, so errors
 * up to then are our usual JSON error envelopes (a foreign `threadId` is the same 404 as a
 * missing one). The stream follows the run through the stream hub from the request's cursor,
 * projected for the caller's audience; a dropped connection only stops the stream, never the
 * run, and the same `runId` again streams the same AG-UI run from its start.
 */
@ApiTags('AG-UI')
@ApiBearerAuth('api-key')
@Controller('ag-ui')
export class AgUiController {
  constructor(
    private readonly runs: AgUiRunsService,
    private readonly feed: SessionEventFeed,
    private readonly sse: CompatSse,
    @Optional() private readonly audit?: RequestAuditWriter,
  ) {}

  @Post('agents/:agent_id')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Run an agent over AG-UI 1.0 (SSE)',
    description:
      'For `@ag-ui/client`\'s `HttpAgent` (`url: <server>/ag-ui/agents/<agent_id>`, `headers: {Authorization: "Bearer <key>"}`). ' +
      '`threadId`: one of your session ids, or any other string, which names a session of yours (of this agent) created on first use. ' +
      '`runId` is the idempotency key: the same `runId` again streams the same run from its start, never a second run. ' +
      'What the request does: `resume` entries decide the approvals of the thread\'s waiting run (`payload: {"decision": "approve" | "reject", "reason"?}`; `status: "cancelled"` rejects) and stream the run on; ' +
      'else trailing `tool` messages are the outputs of the waiting run\'s client tool calls (content: JSON or text; `error` fails the call) and stream it on; ' +
      'else the newest `user` message starts a new run (the server keeps the history: earlier messages are not read), with the request\'s `tools` as client tools of that run (a thread whose run is still going steers it instead: the session default). ' +
      'The user input\'s persistent receipt id is in the `X-Agent-Input-Id` response header (`GET /v1/inputs/{id}`: where it went, which run took it). ' +
      'Every stream passes `@ag-ui/client`\'s verifier: `RUN_STARTED` first, every START closed by its END, exactly one `RUN_FINISHED` or `RUN_ERROR` last. ' +
      'Subagents (CONTRACT 16) are part of the stream: their runs\' events nest between `SUBAGENT_STARTED` and `SUBAGENT_FINISHED`/`SUBAGENT_ERROR`, each with the subagent\'s `subagentRunId`; a run waiting for its subagents (`waiting_for_subagents`) goes on in the same stream, and a subagent\'s end comes before what its parent does after learning it. ' +
      'A dropped connection does not stop the run. Members see the member projection (private tools redacted).\n\n' +
      EVENT_TABLE,
  })
  @ApiParam({ name: 'agent_id', example: 'support_agent' })
  @ApiJsonBody(RunAgentInputDto, {
    plain: {
      summary: 'A plain question on a named thread',
      value: { threadId: 'swagger-thread-1', runId: 'swagger-run-1', messages: [{ id: 'm1', role: 'user', content: 'What time is it?' }], tools: [], context: [] },
    },
  })
  @ApiProduces('text/event-stream')
  @ApiResponse({
    status: 200,
    description: 'An SSE stream of AG-UI events, one `data:` line (the event JSON) per frame.\n\nOn the wire:\n\n```\n' + WIRE_EXAMPLE + '\n```',
    content: { 'text/event-stream': { schema: { type: 'object', required: ['type'], properties: { type: { type: 'string', enum: ['RUN_STARTED', 'RUN_FINISHED', 'RUN_ERROR', 'STEP_STARTED', 'STEP_FINISHED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'TOOL_CALL_RESULT', 'SUBAGENT_STARTED', 'SUBAGENT_FINISHED', 'SUBAGENT_ERROR'] }, timestamp: { type: 'integer' }, subagentRunId: { type: 'string', description: 'The subagent run an event belongs to (CONTRACT 16); absent: the AG-UI run\'s own.' } }, additionalProperties: true } } },
  })
  @ApiErrors('invalid_request', 'session_not_found', 'agent_not_found', 'session_busy', 'session_archived', 'run_finished', 'approval_not_found', 'approval_already_decided', 'approval_not_pending', 'tool_output_not_expected', 'idempotency_in_progress', 'rate_limited', 'quota_exceeded')
  async run(
    @CurrentPrincipal() principal: Principal,
    @Param('agent_id') agentId: string,
    @Body() dto: RunAgentInputDto,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const messages = dto.messages.map(readMessage);
    const target = await this.runs.start(
      principal,
      {
        agentId,
        threadId: dto.threadId,
        runId: dto.runId,
        messages,
        tools: (dto.tools ?? []).map((t) => ({ name: t.name, description: t.description, parameters: t.parameters })),
        resume: (dto.resume ?? []).map((r) => ({ interruptId: r.interruptId, status: r.status, payload: r.payload })),
      },
      this.audit ? (body) => this.audit!.writeFor(req, 200, body) : undefined,
    );
    if (this.audit) this.audit.recorded(req);

    const conn = await this.sse.open(principal, req, reply, { kind: 'run', id: target.run_id }, {
      'x-agent-run-id': target.run_id,
      'x-agent-session-id': target.session_id,
      // The input's persistent receipt (CONTRACT section 7): GET /v1/inputs/{id}.
      ...(target.input_id ? { 'x-agent-input-id': target.input_id } : {}),
    });
    if (conn.isClosed) return;
    const audience = audienceOf(principal);
    const frames = (events: AgUiEvent[]): SseFrame[] => events.map((e) => ({ data: JSON.stringify(e) }));
    // Subagents (CONTRACT 16): each subagent run the stream opens is followed from its start, into the same connection.
    const follow = (subagentRunId: string) =>
      this.feed.pipe(conn, { kind: 'run', id: subagentRunId }, 0, audience, (events) => step(() => stream.onSubagentRun(subagentRunId, events)), failed);
    const stream = new AgUiRunStream(dto.threadId, dto.runId, follow);
    const failed = (): SseFrame[] => frames(stream.fail('internal_error', 'the event stream could not be translated'));
    let release: NodeJS.Timeout | null = null;
    conn.onClose(() => release && clearTimeout(release));
    /** A run whose events wait for a subagent's own end waits SUBAGENT_WAIT_MS at most. */
    const schedule = () => {
      if (!stream.waiting || release || conn.isClosed) return;
      release = setTimeout(() => {
        release = null;
        let more: SseFrame[];
        try {
          more = frames(stream.release());
        } catch {
          more = failed();
        }
        writeFrames(conn, more);
        if (stream.done) conn.end();
        else schedule();
      }, SUBAGENT_WAIT_MS);
      release.unref();
    };
    /** One batch's AG-UI events. */
    const step = (map: () => AgUiEvent[]): FeedStep => {
      if (stream.done) return { frames: [], end: true };
      let out: AgUiEvent[];
      try {
        out = map();
      } catch {
        return { frames: failed(), end: true };
      }
      schedule();
      return { frames: frames(out), end: stream.done };
    };
    writeFrames(conn, frames(stream.start()));
    this.feed.pipe(conn, { kind: 'run', id: target.run_id }, target.after, audience, (events) => step(() => stream.onRun(events)), failed);
  }
}

/** A message of the request, read loosely: role and content, and a tool message's call id and error. */
function readMessage(m: Record<string, unknown>): AgUiMessage {
  return {
    id: typeof m.id === 'string' ? m.id : undefined,
    role: typeof m.role === 'string' ? m.role : '',
    content: m.content,
    toolCallId: typeof m.toolCallId === 'string' ? m.toolCallId : undefined,
    error: typeof m.error === 'string' ? m.error : undefined,
  };
}
