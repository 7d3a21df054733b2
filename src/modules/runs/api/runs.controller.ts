import { Body, Controller, Get, Headers, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiAcceptedResponse, ApiBearerAuth, ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CurrentPrincipal, KeyOptional, OptionalPrincipal } from '../../../common/auth/auth.decorators';
import { DomainError } from '../../../common/errors/domain-error';
import { AnswerToolCallbackCommand } from '../application/commands/answer-tool-callback/answer-tool-callback.command';
import { Principal } from '../../../common/auth/principal';
import { ApiErrors } from '../../../common/errors/error.dto';
import { ApiIdempotencyKey, ApiJsonBody } from '../../../common/http/api-docs.decorators';
import { listPage, ListQueryDto } from '../../../common/http/pagination';
import { ContentPart } from '../../agents/domain/model-provider';
import { IdempotentExecutor } from '../../idempotency/application/idempotent-executor';
import { CancelRunCommand } from '../application/commands/cancel-run/cancel-run.command';
import { CreateRunCommand } from '../application/commands/create-run/create-run.command';
import { ListRunsQuery } from '../application/queries/list-runs/list-runs.query';
import { GetInputReceiptQuery } from '../application/queries/get-input-receipt/get-input-receipt.query';
import { RunViews } from '../application/run-views';
import { SubmitToolOutputsCommand } from '../application/commands/submit-tool-outputs/submit-tool-outputs.command';
import { CreateRunRequestDto } from './dto/create-run.request.dto';
import { SubmitToolOutputsRequestDto, ToolCallbackRequestDto, ToolCallbackResponseDto } from './dto/tool-outputs.request.dto';
import { InputReceiptDto, RunListResponseDto, RunReceiptDto, RunResponseDto } from './dto/run.response.dto';

/** The tool call id of the client-tool examples (its run and its tool output). */
const EXAMPLE_TOOL_CALL_ID = 'call_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B';

@ApiTags('Runs')
@ApiBearerAuth('api-key')
@Controller('v1')
export class RunsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    private readonly idempotent: IdempotentExecutor,
    private readonly views: RunViews,
  ) {}

  @Post('sessions/:id/runs')
  @ApiOperation({
    summary: 'Start a run',
    description:
      'Commits the user message and a queued run in one transaction and answers 202 with a receipt (`Location` names the run); a worker executes it. ' +
      'Follow it on `stream.url` (SSE). `mode: "sync"` waits up to `wait_timeout_ms` for a terminal or waiting status and answers 200 with the Run (and `output_text`), else 202 with the Run. ' +
      'One active run per session: `concurrency: "reject"` answers 409 `session_busy`; `"enqueue"` queues it FIFO; ' +
      '`"steer"` commits the input at once as a user message and hands it to the active run, which takes it into its next model turn (after the tool calls in flight; `run.input` on its stream): the 202 names that run with `steered: true`. ' +
      'A run that ends before taking it leaves ALL such input, in commit order, to ONE follow-up run, queued as if enqueued (FIFO follow-up). `"interrupt"` cancels the active run (honestly: a tool in flight finishes and its outcome is recorded) and queues this one after it. ' +
      'Without an active run every mode starts a new run. Omitted: the session\'s `default_concurrency` (default `steer`; `reject` answers 409 for clients that want it). ' +
      'An active run waiting for input (`ask_user`, `waiting_for_input`) is answered by the input in every mode: the 202 names that run with `steered: true, answered: true`, and it continues with the input as the tool\'s result (same run, step count kept).',
  })
  @ApiIdempotencyKey(true)
  @ApiJsonBody(CreateRunRequestDto, {
    order: {
      summary: 'Order O-1001: get_order, then create_ticket, which waits for an approval',
      value: { input: { role: 'user', content: [{ type: 'text', text: 'Where is my order O-1001?' }] } },
    },
    client_tool: {
      summary: 'A client tool (lookup_customer): the run waits for POST /v1/runs/{id}/tool_outputs',
      description: `A \`!script\` for the scripted model: the first turn calls the client tool \`lookup_customer\` with the call id \`${EXAMPLE_TOOL_CALL_ID}\` (the id the tool_outputs example answers), the second answers.`,
      value: {
        input: {
          role: 'user',
          content: [
            {
              type: 'text',
              text: `!script ${JSON.stringify([
                { tool_calls: [{ id: EXAMPLE_TOOL_CALL_ID, name: 'lookup_customer', arguments: { email: 'ada@example.com' } }] },
                { text: 'Ada Lovelace is a gold customer.' },
              ])}`,
            },
          ],
        },
      },
    },
    sync: {
      summary: 'Sync mode: wait for the answer (200 with the Run and output_text)',
      value: { input: { role: 'user', content: [{ type: 'text', text: 'What time is it?' }] }, mode: 'sync', wait_timeout_ms: 20000, metadata: { channel: 'swagger' } },
    },
  })
  @ApiAcceptedResponse({ type: RunReceiptDto, description: 'Accepted (stream mode), or still running at the sync timeout (then the body is a Run).' })
  @ApiOkResponse({ type: RunResponseDto, description: 'Sync mode: the run reached a terminal or waiting status.' })
  @ApiErrors(
    'invalid_request',
    'idempotency_key_required',
    'session_not_found',
    'session_busy',
    'session_archived',
    'session_conflict',
    'attachment_not_found',
    'attachment_not_ready',
    'attachment_expired',
    'attachment_rejected',
    'idempotency_conflict',
    'idempotency_in_progress',
    'quota_exceeded',
  )
  async create(
    @CurrentPrincipal() principal: Principal,
    @Param('id') sessionId: string,
    @Body() dto: CreateRunRequestDto,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
  ) {
    // The input message, the run, the stored response and the audit record: one statement (a sync
    // run's response is provisional until it settles: a transaction, then the final response).
    // Steer, interrupt and enqueue read the session's active run first (locked): a transaction.
    const batch = dto.mode !== 'sync' && (dto.concurrency === undefined || dto.concurrency === 'reject');
    // A replay answers the receipt as it is now (and the run that took the input).
    const refresh = (body: unknown) => this.currentReceipt(principal, body);
    await this.idempotent.execute(req, reply, { required: true, batch, refresh }, async () => {
      const { run, userMessageId, steered, answered, receipt: input } = await this.commands.execute(
        new CreateRunCommand(principal, sessionId, {
          content: dto.input.content as ContentPart[],
          concurrency: dto.concurrency,
          expectedRevision: dto.expected_revision,
          limits: dto.limits,
          metadata: dto.metadata,
          model: dto.model,
        }),
      );
      const location = `/v1/runs/${run.id}`;
      const headers = { location, 'content-location': location };
      const receipt: RunReceiptDto = {
        run_id: run.id,
        session_id: run.sessionId,
        user_message_id: userMessageId,
        status: steered ? run.status : 'queued',
        ...(steered ? { steered: true as const } : {}),
        ...(answered ? { answered: true as const } : {}),
        stream: { protocol: 'sse', url: `/v1/runs/${run.id}/events`, cursor: null },
        receipt: InputReceiptDto.from(input),
      };
      if (dto.mode !== 'sync') return { status: 202, body: receipt, headers };
      const waitMs = dto.wait_timeout_ms ?? 60_000;
      return {
        status: 202,
        body: receipt,
        headers,
        holdMs: waitMs + 10_000,
        finalize: async () => {
          const settled = await this.views.waitForSettled(principal, run.id, waitMs);
          return { status: settled.settled ? 200 : 202, body: settled.view, headers };
        },
      };
    });
  }

  /** A stored 202 with the receipt as it is now: `receipt`, and `run_id` / `stream.url` of the run that took the input. */
  private async currentReceipt(principal: Principal, body: unknown): Promise<{ body: unknown; headers?: Record<string, string> }> {
    const b = body as Partial<RunReceiptDto> | null;
    if (!b || typeof b !== 'object' || !b.receipt?.id) return { body };
    const now = InputReceiptDto.from(await this.queries.execute(new GetInputReceiptQuery(principal, b.receipt.id)));
    const location = `/v1/runs/${now.run_id}`;
    return {
      body: { ...b, run_id: now.run_id, stream: { ...b.stream, url: `${location}/events` }, receipt: now },
      headers: { location, 'content-location': location },
    };
  }

  @Get('sessions/:id/runs')
  @ApiOperation({ summary: "List a session's runs", description: 'Default order: desc (newest first).' })
  @ApiOkResponse({ type: RunListResponseDto })
  @ApiErrors('session_not_found', 'invalid_cursor', 'invalid_request')
  async list(@CurrentPrincipal() principal: Principal, @Param('id') sessionId: string, @Query() q: ListQueryDto): Promise<RunListResponseDto> {
    const { items, hasMore } = await this.queries.execute(
      new ListRunsQuery(principal, sessionId, { after: q.after, limit: q.limit ?? 20, order: q.order ?? 'desc' }),
    );
    return listPage(await this.views.toViews(principal, items), hasMore);
  }

  @Get('inputs/:id')
  @ApiOperation({
    summary: "Get an input's receipt",
    description:
      'Where an accepted input went, as it is now: `disposition`, the run that took or will take it (`run_id`: a steer whose run ended first names the follow-up run) and `taken_at` (when a model turn took it). Someone else\'s input is 404 like a missing one.',
  })
  @ApiOkResponse({ type: InputReceiptDto })
  @ApiErrors('input_not_found')
  async getInput(@CurrentPrincipal() principal: Principal, @Param('id') inputId: string): Promise<InputReceiptDto> {
    return InputReceiptDto.from(await this.queries.execute(new GetInputReceiptQuery(principal, inputId)));
  }

  @Get('runs/:id')
  @ApiOperation({ summary: 'Get a run' })
  @ApiOkResponse({ type: RunResponseDto })
  @ApiErrors('run_not_found')
  async get(@CurrentPrincipal() principal: Principal, @Param('id') runId: string): Promise<RunResponseDto> {
    return this.views.get(principal, runId);
  }

  @Post('runs/:id/cancel')
  @ApiOperation({
    summary: 'Cancel a run',
    description:
      'Queued and waiting runs become `cancelled` at once. A run in the middle of a model call or tool becomes `cancelling` and then `cancelled` once that step has stopped (its outcome is recorded, never guessed). ' +
      'Cancelling a cancelled run answers 200 with the same run; any other finished run is 409 `run_finished`.',
  })
  @ApiIdempotencyKey(false)
  @ApiAcceptedResponse({ type: RunResponseDto })
  @ApiOkResponse({ type: RunResponseDto, description: 'The run was already cancelled.' })
  @ApiErrors('run_not_found', 'run_finished')
  async cancel(@CurrentPrincipal() principal: Principal, @Param('id') runId: string, @Req() req: FastifyRequest, @Res() reply: FastifyReply) {
    await this.idempotent.execute(req, reply, {}, async () => {
      const { run, alreadyCancelled } = await this.commands.execute(new CancelRunCommand(principal, runId));
      return { status: alreadyCancelled ? 200 : 202, body: await this.views.toView(principal, run) };
    });
  }

  @Post('runs/:id/tool_outputs')
  @ApiOperation({
    summary: 'Submit client-side tool outputs',
    description:
      'For a run in `waiting_for_tool`: give the output (or error) of each pending client tool call (`pending_tool_calls`). When none is left pending the run resumes. ' +
      'Ids that are not pending: 409 `tool_output_not_expected`; a finished run: 409 `run_finished`.',
  })
  @ApiIdempotencyKey(false)
  @ApiJsonBody(SubmitToolOutputsRequestDto, {
    output: {
      summary: "lookup_customer's output (for the run started with the client_tool example)",
      value: { tool_outputs: [{ tool_call_id: EXAMPLE_TOOL_CALL_ID, output: { name: 'Ada Lovelace', tier: 'gold' } }] },
    },
    error: {
      summary: 'The client tool failed',
      value: { tool_outputs: [{ tool_call_id: EXAMPLE_TOOL_CALL_ID, error: { code: 'tool_failed', message: 'customer not found in CRM' } }] },
    },
  })
  @ApiOkResponse({ type: RunResponseDto })
  @ApiErrors('invalid_request', 'run_not_found', 'tool_output_not_expected', 'run_finished')
  async toolOutputs(
    @CurrentPrincipal() principal: Principal,
    @Param('id') runId: string,
    @Body() dto: SubmitToolOutputsRequestDto,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
  ) {
    await this.idempotent.execute(req, reply, {}, async () => {
      const run = await this.commands.execute(new SubmitToolOutputsCommand(principal, runId, dto.tool_outputs));
      return { status: 200, body: await this.views.toView(principal, run) };
    });
  }

  @Post('runs/:id/callbacks/:tool_call_id')
  @KeyOptional()
  @HttpCode(200)
  @ApiOperation({
    summary: "Answer a tool's callback",
    description:
      'An http tool may answer its call with `202 {"callback": true}`: the run waits in `waiting_for_callback` until the tool (or whoever it hands the work to) posts the result here. ' +
      'Authorised by the `Callback-Token` header the tool request carried (one token per call, single use, no API key needed) or by an admin API key of the run\'s tenant. ' +
      'The call becomes `tool.completed` (`output`) or `tool.failed` (`error`) and the same run continues. ' +
      "A callback for a call that does not wait for one (already answered, timed out after the tool's `callback_timeout_ms`, or the run ended) is 409 `callback_not_expected`. " +
      'A result that arrives before the tool\'s 202 is accepted too (the call is still executing).',
  })
  @ApiHeader({ name: 'Callback-Token', required: false, description: 'The token the tool request carried in its `Callback-Token` header.' })
  @ApiJsonBody(ToolCallbackRequestDto, {
    output: { summary: 'The result', value: { output: { shipment_id: 'SHP-7', status: 'dispatched' } } },
    error: { summary: 'The tool failed', value: { error: { code: 'tool_failed', message: 'warehouse offline' } } },
  })
  @ApiOkResponse({ type: ToolCallbackResponseDto })
  @ApiErrors('invalid_request', 'unauthorized', 'forbidden', 'run_not_found', 'callback_not_expected')
  async callback(
    @OptionalPrincipal() principal: Principal | undefined,
    @Param('id') runId: string,
    @Param('tool_call_id') toolCallId: string,
    @Headers('callback-token') token: string | undefined,
    @Body() dto: ToolCallbackRequestDto,
  ): Promise<ToolCallbackResponseDto> {
    let auth: ConstructorParameters<typeof AnswerToolCallbackCommand>[2];
    if (typeof token === 'string' && token.length > 0) auth = { token };
    else if (principal?.role === 'admin') auth = { admin: principal };
    else if (principal) throw new DomainError('forbidden', 'a callback needs its Callback-Token or an admin API key');
    else throw new DomainError('unauthorized', 'a callback needs its Callback-Token or an admin API key');
    const answer = dto.error ? { error: { ...(dto.error.code ? { code: dto.error.code } : {}), message: dto.error.message } } : { output: dto.output };
    const run = await this.commands.execute(new AnswerToolCallbackCommand(runId, toolCallId, auth, answer));
    return { object: 'tool_callback', run_id: run.id, tool_call_id: toolCallId, run_status: run.status };
  }
}
