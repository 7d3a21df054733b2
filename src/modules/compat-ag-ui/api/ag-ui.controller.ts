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
import { audienceOf, SessionEventFeed } from '../../compat-shared/session-event-feed';
import { AgUiRunsService } from '../application/ag-ui-runs.service';
import { AgUiEventMapper, AgUiEvent } from '../domain/ag-ui-event-mapper';
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
    content: { 'text/event-stream': { schema: { type: 'object', required: ['type'], properties: { type: { type: 'string', enum: ['RUN_STARTED', 'RUN_FINISHED', 'RUN_ERROR', 'STEP_STARTED', 'STEP_FINISHED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'TOOL_CALL_RESULT'] }, timestamp: { type: 'integer' } }, additionalProperties: true } } },
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
    const mapper = new AgUiEventMapper(dto.threadId, dto.runId);
    const frames = (events: AgUiEvent[]): SseFrame[] => events.map((e) => ({ data: JSON.stringify(e) }));
    const failed = (): SseFrame[] => frames(mapper.fail('internal_error', 'the event stream could not be translated'));
    writeFrames(conn, frames(mapper.start()));
    this.feed.pipe(
      conn,
      { kind: 'run', id: target.run_id },
      target.after,
      audienceOf(principal),
      (events) => {
        if (mapper.done) return { frames: [], end: true };
        const out: AgUiEvent[] = [];
        try {
          for (const e of events) {
            out.push(...mapper.map(e));
            if (mapper.done) break;
          }
        } catch {
          return { frames: [...frames(out), ...failed()], end: true };
        }
        return { frames: frames(out), end: mapper.done };
      },
      failed,
    );
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
