import { Body, Controller, Delete, Get, Param, Post, Query, Req, Res, UseFilters } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiBearerAuth, ApiExcludeEndpoint, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { ApiIdempotencyKey, ApiJsonBody } from '../../../common/http/api-docs.decorators';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CurrentPrincipal } from '../../../common/auth/auth.decorators';
import { Principal } from '../../../common/auth/principal';
import { DomainError } from '../../../common/errors/domain-error';
import { ContentPart } from '../../agents/domain/model-provider';
import type { ResolvedAgent } from '../../agents/domain/agent-definition';
import { GetAgentQuery, GetPinnedAgentQuery, ListAgentsQuery } from '../../agents/application/queries/agent-queries';
import { SseFrame } from '../../events/api/sse';
import { IdempotentExecutor } from '../../idempotency/application/idempotent-executor';
import { GetRunViewQuery } from '../../runs/application/queries/get-run-view/get-run-view.query';
import { ListRunsQuery } from '../../runs/application/queries/list-runs/list-runs.query';
import { RunProps } from '../../runs/domain/run.aggregate';
import { UpdateSessionCommand } from '../../sessions/application/commands/update-session/update-session.command';
import { DeleteSessionCommand } from '../../sessions/application/commands/delete-session/delete-session.command';
import { ListSessionsQuery } from '../../sessions/application/queries/list-sessions/list-sessions.query';
import { SessionProps } from '../../sessions/domain/session.aggregate';
import { CompatSse } from '../../compat-shared/compat-sse';
import { audienceOf, SessionEventFeed } from '../../compat-shared/session-event-feed';
import { SessionHistory } from '../../compat-shared/session-history';
import { SessionInputs } from '../../compat-shared/session-inputs';
import { SessionWorkStatusQuery } from '../../sessions/application/queries/session-work-status/session-work-status.query';
import { InputReceiptDto } from '../../runs/api/dto/run.response.dto';
import { GetInputReceiptQuery } from '../../runs/application/queries/get-input-receipt/get-input-receipt.query';
import type { InputReceipt } from '../../runs/domain/input-receipt';
import { nativeToolOutput } from '../../compat-shared/tool-output';
import { AgentSessionProjection, ProjectionSubagents } from '../domain/agent-session-projection';
import { InputEvent, InputProblem, parseInputEvents, parseMessages } from '../domain/input-events';
import { InlineAgentInput, parseInlineAgent } from '../domain/inline-agent';
import { callingAgentIdOf, itemsPage, sessionAgentOf, sessionSnapshotOf, toOpenAiAgent, toOpenAiSession, toOpenAiTurn } from '../domain/openai-resources';
import { OpenAiEventsCreateDto, OpenAiListQueryDto, OpenAiSessionCreateDto, OpenAiSessionListQueryDto, OpenAiSessionUpdateDto } from './dto/openai.dto';
import { OpenAiErrorFilter, OpenAiRequestError } from './openai-error.filter';
import { OpenAiSubagents } from '../application/openai-subagents';

/** `Last-Event-ID`: a session_sequence, or `n.k` (the k-th of several frames one native event gave). */
const RESUME_RE = /^(\d{1,15})(?:\.(\d{1,4}))?$/;
const ITEMS_DESCRIPTION =
  'Items are read from the native messages (`/v1/sessions/{id}/messages`) a page at a time, by keyset in the database, so any number of them pages cheaply. ' +
  'An item id is its position in the history: a message item is the message id (`msg_...`); a function call is `fc_<message ULID>_<part>` and its output ' +
  '`fco_<message ULID>_<part>`, `part` being the index of the content part of the assistant (tool) message that holds it. ' +
  '`after` takes any item id of the list (e.g. the last of the previous page); items of one message follow each other, reversed with `order: desc`. Like every list of this surface, the default order is `desc` (newest first), as the SDK documents. ' +
  'Members see private tools\' arguments and results redacted, as on `/v1`.';

/**
 * The OpenAI Agents API (beta) under `/openai/v1`, for the official `openai` SDK (7.55): an
 * adapter over the native commands, queries and event stream (CONTRACT section 15). Sessions,
 * turns and items are the native sessions, runs and messages.
 */
@ApiTags('OpenAI Agents API (beta)')
@ApiBearerAuth('api-key')
@UseFilters(OpenAiErrorFilter)
@Controller('openai/v1')
export class OpenAiAgentsController {
  /** A pinned agent version (immutable) as `AgentSession.agent`, with its client tools' names, by tenant, id, version and model. */
  private readonly agents = new Map<string, { agent: Record<string, unknown>; clientTools: Set<string> }>();

  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    private readonly idempotent: IdempotentExecutor,
    private readonly inputs: SessionInputs,
    private readonly feed: SessionEventFeed,
    private readonly history: SessionHistory,
    private readonly sse: CompatSse,
    private readonly subagents: OpenAiSubagents,
  ) {}

  // ---- agents -------------------------------------------------------------------------------

  @Get('agents')
  @ApiOperation({ summary: 'List agents (our configured agents in OpenAI\'s Agent shape)' })
  async listAgents(@CurrentPrincipal() principal: Principal, @Query() q: OpenAiListQueryDto) {
    const { items, hasMore } = await this.queries.execute(new ListAgentsQuery(principal, { after: q.after, limit: q.limit ?? 20, order: q.order ?? 'desc' }));
    return { object: 'list', data: items.map((a: ResolvedAgent) => toOpenAiAgent(a)), has_more: hasMore };
  }

  @Get('agents/:id')
  @ApiOperation({ summary: 'Retrieve an agent' })
  async getAgent(@CurrentPrincipal() principal: Principal, @Param('id') id: string) {
    return toOpenAiAgent(await this.queries.execute(new GetAgentQuery(principal, id)));
  }

  // ---- sessions -----------------------------------------------------------------------------

  @Post('agents/sessions')
  @ApiOperation({
    summary: 'Create a session',
    description:
      '`agent_id` (one of ours) or an inline `agent` (`model`, `instructions`, `tools` of type `function`: executed by the client, answered with ' +
      '`agent.session.input.tool_result`; `multi_agent: {enabled, max_concurrent_subagents?}`: our `subagents` (CONTRACT 16: the subagent tools, a subagent runs the same configuration); ' +
      'other tool types, `async` or deferred functions, reasoning and text formats are 400 naming the `param`), ' +
      'and `environment: {"type":"none"}`; any other environment is 400. The session pins the inline agent (`agent.id` `inline_...`). ' +
      '`Idempotency-Key` is honoured. A given `input` starts the first turn.',
  })
  @ApiIdempotencyKey(false)
  @ApiJsonBody(OpenAiSessionCreateDto, {
    session: { summary: 'A session of support_agent', value: { agent_id: 'support_agent', environment: { type: 'none' }, metadata: { channel: 'swagger' } } },
    inline_agent: {
      summary: 'An inline agent with a client function tool',
      value: {
        environment: { type: 'none' },
        agent: {
          model: 'scripted',
          instructions: 'Confirm with the user before acting.',
          tools: [{ type: 'function', name: 'confirm_with_user', description: 'Asks the user a yes/no question.', parameters: { type: 'object', properties: { question: { type: 'string' } }, required: ['question'] } }],
        },
      },
    },
  })
  async createSession(@CurrentPrincipal() principal: Principal, @Body() dto: OpenAiSessionCreateDto, @Req() req: FastifyRequest, @Res() reply: FastifyReply) {
    checkEnvironment(dto.environment);
    const inline = dto.agent === undefined ? undefined : parseInlineAgent(dto.agent, dto.agent_id !== undefined);
    if (dto.stream === true) throw new OpenAiRequestError('stream: true is not supported on create: create the session, then use sessions.stream (GET .../events)', 'stream');
    if (dto.vault_ids && dto.vault_ids.length > 0) throw new OpenAiRequestError('vault_ids are not supported by this server', 'vault_ids');
    if (dto.spend_control !== undefined && dto.spend_control !== null) throw new OpenAiRequestError('spend_control is not supported by this server', 'spend_control');
    const metadata = checkMetadata(dto.metadata);
    const input = dto.input === undefined || dto.input === null ? null : parseMessages(dto.input, 'input');
    await this.idempotent.execute(req, reply, {}, async () => {
      const s = inline ? await this.createInlineSession(principal, inline, metadata) : await this.inputs.createSession(principal, { agentId: dto.agent_id, metadata });
      let active: Readonly<RunProps> | null = null;
      if (input) active = (await this.inputs.submitMessage(principal, s.id, input)).run;
      const { agent } = await this.agentOf(principal, s);
      return { status: 200, body: toOpenAiSession(active ? { ...s, activeRunId: active.id } : s, agent, active) };
    });
  }

  /** A session pinning the inline agent; the native configuration's field problems come back as 400s naming the SDK's param. */
  private async createInlineSession(principal: Principal, agent: InlineAgentInput, metadata: Record<string, string> | undefined): Promise<Readonly<SessionProps>> {
    try {
      return await this.inputs.createSession(principal, { agent, metadata });
    } catch (err) {
      const first = err instanceof DomainError && err.code === 'invalid_request' ? (err.details as { errors?: Array<{ field: string; message: string }> }).errors?.[0] : undefined;
      if (first) {
        // The native field of `multi_agent` is `subagents`: the SDK's name is the param.
        const param = first.field === 'agent.subagents.max_concurrent' ? 'agent.multi_agent.max_concurrent_subagents' : first.field;
        throw new OpenAiRequestError(`inline agent: ${param} ${first.message}`, param);
      }
      throw err;
    }
  }

  @Get('agents/sessions')
  @ApiOperation({ summary: 'List sessions (newest first by default)' })
  async listSessions(@CurrentPrincipal() principal: Principal, @Query() q: OpenAiSessionListQueryDto) {
    const { items, hasMore } = await this.queries.execute(new ListSessionsQuery(principal, { after: q.after, limit: q.limit ?? 20, order: q.order ?? 'desc' }));
    const shown = q.agent_id ? items.filter((s) => s.agent.id === q.agent_id) : items;
    const data = await Promise.all(shown.map((s) => this.sessionView(principal, s)));
    return { object: 'list', data, has_more: hasMore, first_id: data[0]?.id ?? null, last_id: data[data.length - 1]?.id ?? null };
  }

  @Get('agents/sessions/:id')
  @ApiOperation({ summary: 'Retrieve a session (status from its active turn; `required_actions`: pending client calls and approvals)' })
  async getSession(@CurrentPrincipal() principal: Principal, @Param('id') id: string) {
    return this.sessionView(principal, await this.inputs.session(principal, id));
  }

  @Post('agents/sessions/:id')
  @ApiOperation({ summary: 'Update a session (metadata)' })
  @ApiParam({ name: 'id', example: 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3D' })
  @ApiIdempotencyKey(false)
  @ApiJsonBody(OpenAiSessionUpdateDto, { metadata: { summary: 'Tag the session', value: { metadata: { channel: 'swagger', priority: 'high' } } } })
  async updateSession(
    @CurrentPrincipal() principal: Principal,
    @Param('id') id: string,
    @Body() dto: OpenAiSessionUpdateDto,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
  ) {
    if (dto.agent !== undefined) throw new OpenAiRequestError('the agent of a session cannot be changed on this server', 'agent');
    if (dto.spend_control !== undefined && dto.spend_control !== null) throw new OpenAiRequestError('spend_control is not supported by this server', 'spend_control');
    const metadata = checkMetadata(dto.metadata);
    await this.idempotent.execute(req, reply, {}, async () => {
      const s = metadata === undefined ? await this.inputs.session(principal, id) : await this.commands.execute(new UpdateSessionCommand(principal, id, { metadata }));
      return { status: 200, body: await this.sessionView(principal, s) };
    });
  }

  @Delete('agents/sessions/:id')
  @ApiOperation({ summary: 'Delete a session (409 while a turn is active)' })
  async deleteSession(@CurrentPrincipal() principal: Principal, @Param('id') id: string) {
    const s = await this.inputs.session(principal, id);
    if (s.activeRunId) throw new DomainError('session_busy', 'the session has an active turn: cancel it (agent.session.input.cancel) before deleting the session', { active_run_id: s.activeRunId });
    await this.commands.execute(new DeleteSessionCommand(principal, id));
    return { id, object: 'agent.session.deleted', deleted: true };
  }

  // ---- input events -------------------------------------------------------------------------

  @Post('agents/sessions/:id/events')
  @ApiOperation({
    summary: 'Submit input events (202 with the input receipt)',
    description:
      'A message starts a turn when the session is idle and steers the active turn otherwise; cancel stops the active turn (a tool in flight first); ' +
      'tool_result answers a pending client function call; approval_result (our extension) decides a pending approval. `Idempotency-Key` is honoured. ' +
      'The 202 body is the message\'s persistent receipt (`{"id":"inp_...","object":"input","disposition","run_id","taken_at",...}`, as GET /v1/inputs/{id}); ' +
      'several message events: `{"object":"list","data":[receipts]}`; no message event: no body. A replayed Idempotency-Key answers the receipts as they are now.',
  })
  @ApiParam({ name: 'id', example: 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3D' })
  @ApiIdempotencyKey(false)
  @ApiJsonBody(OpenAiEventsCreateDto, {
    message: {
      summary: 'A user message: a new turn (idle session) or a steer (active turn)',
      value: { events: [{ type: 'agent.session.input.message', input: [{ role: 'user', content: [{ type: 'input_text', text: 'What time is it?' }] }] }] },
    },
  })
  async createEvents(
    @CurrentPrincipal() principal: Principal,
    @Param('id') id: string,
    @Body() dto: OpenAiEventsCreateDto,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
  ) {
    const events = parseInputEvents(dto);
    await this.inputs.session(principal, id); // 404 before anything else
    const refresh = (body: unknown) => this.currentReceipts(principal, body);
    await this.idempotent.execute(req, reply, { refresh }, async () => {
      const receipts: InputReceiptDto[] = [];
      for (const e of events) {
        const receipt = await this.applyInput(principal, id, e);
        if (receipt) receipts.push(InputReceiptDto.from(receipt));
      }
      const body = receipts.length === 0 ? undefined : receipts.length === 1 ? receipts[0] : { object: 'list', data: receipts };
      return { status: 202, body };
    });
  }

  /** A stored events answer with its receipts as they are now (CONTRACT section 7). */
  private async currentReceipts(principal: Principal, body: unknown): Promise<{ body: unknown }> {
    const now = (r: InputReceiptDto) => this.queries.execute(new GetInputReceiptQuery(principal, r.id)).then((x) => InputReceiptDto.from(x));
    const b = body as { object?: string; id?: string; data?: InputReceiptDto[] };
    if (b?.object === 'input' && b.id) return { body: await now(b as unknown as InputReceiptDto) };
    if (b?.object === 'list' && Array.isArray(b.data)) return { body: { ...b, data: await Promise.all(b.data.map(now)) } };
    return { body };
  }

  /** Applies one input event; a message answers its receipt. */
  private async applyInput(principal: Principal, sessionId: string, e: InputEvent): Promise<InputReceipt | null> {
    switch (e.type) {
      case 'message':
        return (await this.inputs.submitMessage(principal, sessionId, e.content as ContentPart[])).receipt;
      case 'cancel':
        await this.inputs.cancelActive(principal, sessionId);
        return null;
      case 'tool_result': {
        const run = await this.turnOf(principal, sessionId, e.turnId);
        const pending = (run.state.pending ?? []).some((p) => p.tool_call_id === e.callId && p.status === 'awaiting_client');
        if (!pending) {
          // Not (yet) awaited: the SDK's tool dispatcher retries exactly this answer shortly.
          throw new OpenAiRequestError(`Unknown pending tool call: ${e.callId}`, 'events', 'invalid_request_error');
        }
        await this.inputs.submitToolOutputs(principal, run.id, [
          e.success ? { tool_call_id: e.callId, output: nativeToolOutput(e.output) } : { tool_call_id: e.callId, error: { code: 'tool_failed', message: e.error ?? 'the client tool failed' } },
        ]);
        return null;
      }
      case 'approval_result': {
        const s = await this.inputs.session(principal, sessionId);
        const run = s.activeRunId ? await this.turnOf(principal, sessionId, s.activeRunId) : null;
        const pending = run && (run.state.pending ?? []).some((p) => p.approval_id === e.approvalId);
        if (!run || !pending) throw new OpenAiRequestError(`Unknown pending approval: ${e.approvalId}`, 'events');
        await this.inputs.decideApproval(principal, run.id, e.approvalId, e.decision, e.reason);
        return null;
      }
    }
  }

  // ---- the event stream ---------------------------------------------------------------------

  @Get('agents/sessions/:id/events')
  @ApiOperation({
    summary: 'Stream session events (SSE of agent.session.* events)',
    description:
      'Starts with live events. Our extension: every frame has `id: <session_sequence>` (`n.k` for the k-th of several frames of one native event, the last carries `n`); ' +
      '`Last-Event-ID: n` (or `n.k`) replays everything after it, then goes live, without loss or repeats.',
  })
  @ApiExcludeEndpoint() // SSE only; documented in the tag and docs/compatibility.md
  async streamEvents(@CurrentPrincipal() principal: Principal, @Param('id') id: string, @Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const session = await this.inputs.session(principal, id);
    const header = req.headers['last-event-id'];
    const raw = typeof header === 'string' ? header.trim() : '';
    let cursor: number;
    let skipSeq = -1;
    let skip = 0;
    if (raw === '') {
      cursor = await this.feed.head(id);
    } else {
      const m = RESUME_RE.exec(raw);
      if (!m) throw new DomainError('invalid_cursor', 'Last-Event-ID must be a session_sequence (n) or a frame id (n.k) of this stream', { after: raw });
      const n = Number(m[1]);
      if (m[2] !== undefined && n > 0) {
        cursor = n - 1;
        skipSeq = n;
        skip = Number(m[2]);
      } else {
        cursor = n;
      }
    }
    await this.feed.assertCursorRetained(id, cursor);
    const audience = audienceOf(principal);
    const { agent, clientTools } = await this.agentOf(principal, session);
    const projection = new AgentSessionProjection(sessionSnapshotOf(session, agent), (name) => clientTools.has(name), await this.projectionSubagents(principal, session));
    for (const e of await this.feed.runHistoryAt(id, cursor, audience)) projection.apply(e);

    const conn = await this.sse.open(principal, req, reply, { kind: 'session', id });
    if (conn.isClosed) return;
    this.feed.pipe(conn, { kind: 'session', id }, cursor, audience, (events) => {
      const out: SseFrame[] = [];
      for (const e of events) {
        const frames = projection.apply(e);
        frames.forEach((f, k) => {
          if (e.session_sequence === skipSeq && k < skip) return;
          const frameId = k === frames.length - 1 ? String(e.session_sequence) : `${e.session_sequence}.${k + 1}`;
          out.push({ id: frameId, event: f.type, data: JSON.stringify(f) });
        });
      }
      return { frames: out };
    });
  }

  // ---- turns and items ----------------------------------------------------------------------

  @Get('agents/sessions/:id/turns')
  @ApiOperation({ summary: "List a session's turns (its runs; newest first by default)" })
  async listTurns(@CurrentPrincipal() principal: Principal, @Param('id') id: string, @Query() q: OpenAiListQueryDto) {
    return this.turnsList(principal, id, q);
  }

  private async turnsList(principal: Principal, id: string, q: OpenAiListQueryDto) {
    const { items, hasMore } = await this.queries.execute(new ListRunsQuery(principal, id, { after: q.after, limit: q.limit ?? 20, order: q.order ?? 'desc' }));
    const data = items.map(toOpenAiTurn);
    return { object: 'list', data, has_more: hasMore, first_id: data[0]?.id ?? null, last_id: data[data.length - 1]?.id ?? null };
  }

  @Get('agents/sessions/:id/turns/:turnId')
  @ApiOperation({ summary: 'Retrieve a turn' })
  async getTurn(@CurrentPrincipal() principal: Principal, @Param('id') id: string, @Param('turnId') turnId: string) {
    return toOpenAiTurn(await this.turnOf(principal, id, turnId));
  }

  @Get('agents/sessions/:id/turns/:turnId/items')
  @ApiOperation({
    summary: "A turn's items (its messages, function calls and their outputs; oldest first by default)",
    description: ITEMS_DESCRIPTION,
  })
  async listTurnItems(@CurrentPrincipal() principal: Principal, @Param('id') id: string, @Param('turnId') turnId: string, @Query() q: OpenAiListQueryDto) {
    await this.turnOf(principal, id, turnId);
    return this.itemsList(principal, id, turnId, q);
  }

  @Get('agents/sessions/:id/items')
  @ApiOperation({ summary: "A session's items across its turns (oldest first by default)", description: ITEMS_DESCRIPTION })
  async listSessionItems(@CurrentPrincipal() principal: Principal, @Param('id') id: string, @Query() q: OpenAiListQueryDto) {
    return this.itemsList(principal, id, undefined, q);
  }

  // ---- subagents (CONTRACT 16) --------------------------------------------------------------

  @Get('agents/sessions/:id/subagents')
  @ApiOperation({
    summary: "List a session's subagents, nested ones included (newest first by default)",
    description:
      'A subagent is a child session (`GET /v1/sessions/{id}/subagents`) that a run of this session (or of one of its subagents, at any depth up to 8) created with `create_subagent`. ' +
      '`id`: the child session id; `session_id`: this (top-level) session; `parent_agent_id`: the agent that created it (a subagent is named by its own id); `instructions`: its task (its first message); ' +
      '`status` `closed` and `closed_at` once `close_subagent` closed it. Ordered by creation; `after` takes a subagent id of this list. Up to 1000 subagents per session are listed.',
  })
  async listSubagents(@CurrentPrincipal() principal: Principal, @Param('id') id: string, @Query() q: OpenAiListQueryDto) {
    const root = await this.inputs.session(principal, id);
    const all = await this.subagents.descendants(principal, root);
    const order = q.order ?? 'desc';
    const sorted = [...all].sort((a, b) => (a.child.id < b.child.id ? -1 : a.child.id > b.child.id ? 1 : 0));
    if (order === 'desc') sorted.reverse();
    let from = 0;
    if (q.after !== undefined) {
      const at = sorted.findIndex((x) => x.child.id === q.after);
      if (at < 0) throw new InputProblem(`after: no subagent "${q.after}" in this list`, 'after');
      from = at + 1;
    }
    const limit = q.limit ?? 20;
    const page = sorted.slice(from, from + limit);
    const data = await Promise.all(page.map((x) => this.subagents.view(principal, x.child, x.parent, root.id)));
    return { object: 'list', data, has_more: from + limit < sorted.length, first_id: data[0]?.id ?? null, last_id: data[data.length - 1]?.id ?? null };
  }

  @Get('agents/sessions/:id/subagents/:subagentId')
  @ApiOperation({ summary: 'Retrieve a subagent of the session (404 for a session that is not one of its subagents)' })
  async getSubagent(@CurrentPrincipal() principal: Principal, @Param('id') id: string, @Param('subagentId') subagentId: string) {
    const { child, parent } = await this.subagents.subagentOf(principal, id, subagentId);
    return this.subagents.view(principal, child, parent, id);
  }

  @Get('agents/sessions/:id/subagents/:subagentId/turns')
  @ApiOperation({ summary: "List a subagent's turns (the runs of its child session; `subagent_id` set; newest first by default)" })
  async listSubagentTurns(@CurrentPrincipal() principal: Principal, @Param('id') id: string, @Param('subagentId') subagentId: string, @Query() q: OpenAiListQueryDto) {
    const { child } = await this.subagents.subagentOf(principal, id, subagentId);
    return this.turnsList(principal, child.id, q);
  }

  @Get('agents/sessions/:id/subagents/:subagentId/turns/:turnId')
  @ApiOperation({ summary: "Retrieve a subagent's turn" })
  async getSubagentTurn(@CurrentPrincipal() principal: Principal, @Param('id') id: string, @Param('subagentId') subagentId: string, @Param('turnId') turnId: string) {
    const { child } = await this.subagents.subagentOf(principal, id, subagentId);
    return toOpenAiTurn(await this.turnOf(principal, child.id, turnId));
  }

  @Get('agents/sessions/:id/subagents/:subagentId/turns/:turnId/items')
  @ApiOperation({ summary: "A subagent's turn's items (newest first by default)", description: ITEMS_DESCRIPTION })
  async listSubagentTurnItems(
    @CurrentPrincipal() principal: Principal,
    @Param('id') id: string,
    @Param('subagentId') subagentId: string,
    @Param('turnId') turnId: string,
    @Query() q: OpenAiListQueryDto,
  ) {
    const { child } = await this.subagents.subagentOf(principal, id, subagentId);
    await this.turnOf(principal, child.id, turnId);
    return this.itemsList(principal, child.id, turnId, q);
  }

  @Get('agents/sessions/:id/subagents/:subagentId/items')
  @ApiOperation({ summary: "A subagent's own items across its turns (newest first by default)", description: ITEMS_DESCRIPTION })
  async listSubagentItems(@CurrentPrincipal() principal: Principal, @Param('id') id: string, @Param('subagentId') subagentId: string, @Query() q: OpenAiListQueryDto) {
    const { child } = await this.subagents.subagentOf(principal, id, subagentId);
    return this.itemsList(principal, child.id, undefined, q);
  }

  // ---- helpers ------------------------------------------------------------------------------

  /** What a session's stream says of subagents: its place in the tree and its subagents so far (up to 100, the newest events add theirs). */
  private async projectionSubagents(principal: Principal, session: Readonly<SessionProps>): Promise<ProjectionSubagents> {
    const root = session.parent ? await this.subagents.rootOf(principal, session) : session;
    const children = await this.subagents.children(principal, session.id, 100);
    const known = await Promise.all(children.map(async (c) => ({ subagent: await this.subagents.view(principal, c, session, root.id), runId: c.parent!.runId })));
    return { rootSessionId: root.id, subagentId: session.parent ? session.id : null, sender: callingAgentIdOf(session), known };
  }

  /** A page of the session's (or one turn's) items, read from the messages by keyset in the database. */
  private async itemsList(principal: Principal, sessionId: string, turnId: string | undefined, q: OpenAiListQueryDto) {
    const order = q.order ?? 'desc';
    const page = await itemsPage(
      {
        message: async (messageId) => {
          const m = await this.history.message(principal, sessionId, messageId);
          return m && (turnId === undefined || m.runId === turnId) ? m : null;
        },
        messages: (after, limit) => this.history.page(principal, sessionId, { after, limit, order, runId: turnId }),
        naming: async () => this.subagents.naming(principal, await this.inputs.session(principal, sessionId)),
      },
      q.after,
      q.limit ?? 20,
      order,
    );
    return { object: 'list', data: page.data, has_more: page.has_more, first_id: page.data[0]?.id ?? null, last_id: page.data[page.data.length - 1]?.id ?? null };
  }

  /** A run of this session the caller may see, or 404 (`run_not_found`). */
  private async turnOf(principal: Principal, sessionId: string, turnId: string): Promise<Readonly<RunProps>> {
    if (!/^run_[0-9A-Za-z-]{1,64}$/.test(turnId)) throw new DomainError('run_not_found', 'run not found', { run_id: turnId });
    const { run } = await this.queries.execute(new GetRunViewQuery(principal, turnId));
    if (run.sessionId !== sessionId) throw new DomainError('run_not_found', 'run not found', { run_id: turnId });
    return run;
  }

  private async sessionView(principal: Principal, s: Readonly<SessionProps>) {
    const [{ agent }, active, statuses] = await Promise.all([
      this.agentOf(principal, s),
      this.inputs.activeRun(principal, s),
      s.activeRunId ? null : this.queries.execute(new SessionWorkStatusQuery([s.id])),
    ]);
    return toOpenAiSession(s, agent, active, statuses?.get(s.id));
  }

  /** The session's pinned agent version (also of a deleted agent or an inline configuration), read once per node. */
  private async agentOf(principal: Principal, s: Readonly<SessionProps>): Promise<{ agent: Record<string, unknown>; clientTools: Set<string> }> {
    const key = `${s.tenantId}/${s.agent.id}@${s.agent.version}@${s.agent.model}`;
    let hit = this.agents.get(key);
    if (!hit) {
      let def: ResolvedAgent | null = null;
      try {
        def = await this.queries.execute(new GetPinnedAgentQuery(principal, s.agent.id, s.agent.version));
      } catch (err) {
        if (!(err instanceof DomainError && err.code === 'agent_not_found')) throw err;
      }
      const tools = def?.resolvedTools ?? [];
      hit = { agent: sessionAgentOf(s, def?.instructions ?? null, tools), clientTools: new Set(tools.filter((t) => t.executor === 'client').map((t) => t.name)) };
      if (def) this.agents.set(key, hit);
    }
    return hit;
  }
}

/** Only `{"type":"none"}`: this server runs agents without an execution environment. */
function checkEnvironment(env: unknown): void {
  if (env === undefined || env === null) throw new OpenAiRequestError('environment is required: this server supports only {"type":"none"}', 'environment');
  const type = typeof env === 'object' && !Array.isArray(env) ? (env as { type?: unknown }).type : undefined;
  if (type !== 'none') {
    throw new OpenAiRequestError(
      `environment type ${JSON.stringify(type ?? null)} is not supported: this server runs agents without an execution environment; use {"type":"none"}`,
      'environment',
    );
  }
  if (Object.keys(env as object).length > 1) throw new OpenAiRequestError('environment {"type":"none"} takes no other fields', 'environment');
}

function checkMetadata(m: Record<string, string> | null | undefined): Record<string, string> | undefined {
  if (m === undefined || m === null) return undefined;
  const entries = Object.entries(m);
  if (entries.length > 16) throw new InputProblem('metadata: at most 16 keys', 'metadata');
  for (const [k, v] of entries) {
    if (typeof v !== 'string' || k.length > 64 || v.length > 512) throw new InputProblem('metadata: string values (keys up to 64, values up to 512 characters)', `metadata.${k}`);
  }
  return m;
}

