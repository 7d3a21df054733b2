import type { SchemaObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import { RUN_EVENT_TYPES, type RunEventType } from '../../events/domain/run-event';

/**
 * The OpenAPI schemas of events and message content parts: the envelope of each event type with
 * its own `data` schema, all under one `RunEvent` union with a discriminator on `type`, and the
 * content parts likewise (`ContentPart`, discriminated by `type`). app.factory.ts hands them to
 * `setupOpenApi`, which adds them to the document; the typed client's event map is generated from them.
 *
 * `run.input` (a steered input a run took into its next model turn) is part of the contract's
 * event list; it is documented here whether or not this build emits it yet.
 */
export type DocumentedEventType = RunEventType | 'run.input';
export const DOCUMENTED_EVENT_TYPES: readonly DocumentedEventType[] = [...new Set<DocumentedEventType>([...RUN_EVENT_TYPES, 'run.input'])];

const ref = (name: string): SchemaObject => ({ $ref: `#/components/schemas/${name}` }) as SchemaObject;
const str = (description: string, example?: string): SchemaObject => ({ type: 'string', description, ...(example === undefined ? {} : { example }) });
const int = (description: string, example: number, minimum = 0): SchemaObject => ({ type: 'integer', minimum, description, example });
const nullable = (s: SchemaObject): SchemaObject => ({ ...s, nullable: true });
const obj = (properties: Record<string, SchemaObject>, description?: string, required = Object.keys(properties)): SchemaObject => ({
  type: 'object',
  ...(description ? { description } : {}),
  required,
  properties,
});
/** Any JSON value (arguments, results). */
const anyJson = (description: string): SchemaObject => ({ description });

const MEMBER_REDACTION =
  'Members see a private tool\'s value as `{"redacted": true}`; keys that look secret (`password`, `secret`, `token`, `api_key`, `authorization`) as `"***"` at any depth.';

const TERMINAL_STATUSES = ['completed', 'failed', 'cancelled', 'expired', 'terminated'];
const TERMINATION_REASONS = ['max_steps', 'deadline', 'token_budget', 'tool_budget', 'cost_budget', 'loop_detected'];
const RUN_ERROR_CODES = [
  'model_error',
  'model_timeout',
  'model_refusal',
  'model_rate_limited',
  'context_length_exceeded',
  'model_auth_failed',
  'tool_failed',
  'tool_timeout',
  'tool_not_found',
  'invalid_tool_arguments',
  'outcome_unknown',
  'approval_expired',
  'input_expired',
  'access_revoked',
  'internal_error',
];
const RISKS = ['auto', 'suggest', 'approve'];

const ids = {
  message: str('The message (`msg_...`).', 'msg_01JD2Z4Q8M3K7P6W9X0Y1Z2A3E'),
  toolCall: str('The tool call (`call_...`).', 'call_01JD2Z4Q8M3K7P6W9X0Y1Z2A3F'),
  toolName: str('The tool, e.g. `get_order`.', 'get_order'),
  approval: str('The approval (`apr_...`).', 'apr_01JD2Z4Q8M3K7P6W9X0Y1Z2A3G'),
};
const risk: SchemaObject = { type: 'string', enum: RISKS, description: '`auto` runs; `suggest` runs, flagged; `approve` needs an approval.' };
const dateTime = (description: string): SchemaObject => ({ type: 'string', format: 'date-time', description, example: '2025-01-02T03:04:05.678Z' });

const RUN_ERROR: SchemaObject = obj(
    {
      code: { type: 'string', enum: RUN_ERROR_CODES, example: 'model_timeout' },
      message: { type: 'string', example: 'the model did not answer in time' },
    },
    'Why a run failed or expired.',
  );

/** Shared pieces referenced by the event and part schemas. */
const SHARED: Record<string, SchemaObject> = {
  Redacted: obj({ redacted: { type: 'boolean', enum: [true] } }, "What replaces a private tool's value (or error message) for members."),
  ToolError: obj(
    {
      code: { type: 'string', description: 'A run-level error code, e.g. `tool_failed`, `tool_timeout`, `outcome_unknown`.', example: 'tool_failed' },
      message: { oneOf: [{ type: 'string' }, ref('Redacted')], description: 'Human-readable; `{"redacted": true}` for members when the tool is private.' },
      retryable: { type: 'boolean' },
    },
    'Why a tool call failed.',
  ),
  EstimatedCost: obj(
    {
      amount: { type: 'string', pattern: '^\\d+(\\.\\d+)?$', description: 'USD, a decimal string (exact: never a binary float), from the model prices of GET /v1/models.', example: '0.001234' },
      currency: { type: 'string', enum: ['USD'], example: 'USD' },
    },
    'The estimated cost of the model calls so far: uncached input at the input price, cached input at the cached price, output (reasoning included) at the output price. Failed and cancelled runs count what they used.',
  ),
  Usage: obj(
    {
      input_tokens: int('Tokens sent to the model (1 per 4 characters with the scripted model).', 42),
      output_tokens: int('Tokens the model produced.', 17),
      cached_input_tokens: int('Input tokens the provider served from its cache (part of input_tokens).', 0),
      reasoning_tokens: int('Output tokens the model spent reasoning (part of output_tokens).', 0),
      estimated_cost: ref('EstimatedCost'),
      model_calls: int('Model calls so far.', 2),
      tool_calls: int('Tool calls so far.', 1),
    },
    "The run's usage so far.",
  ),
};

/** `data` of each event type. */
export const EVENT_DATA_SCHEMAS: Record<DocumentedEventType, SchemaObject> = {
  'run.started': obj({ status: { type: 'string', enum: ['running'] } }),
  'run.waiting': obj({
    status: { type: 'string', enum: ['waiting_for_approval', 'waiting_for_tool', 'waiting_for_input', 'waiting_for_callback', 'waiting_for_timer', 'waiting_for_quota', 'waiting_for_subagents'] },
    reason: {
      type: 'string',
      enum: ['approval_required', 'client_tool', 'input_required', 'callback', 'timer', 'quota', 'subagents'],
      description:
        '`approval_required`: a tool call awaits a decision; `client_tool`: a client tool awaits its output; `input_required`: `ask_user` awaits the next user input; ' +
        "`callback`: an http tool's result comes by callback; `timer`: `wait`/`wait_until` sleeps; `quota`: the tenant's spend limit is reached (the run continues when it allows); `subagents`: `wait_for_subagents` waits for subagent runs (CONTRACT 16).",
    },
  }),
  'run.input_requested': obj({
    question: str('What `ask_user` asks; the next user input to the session answers it (as the tool\'s result) and the same run continues.', 'Which order do you mean?'),
    tool_call_id: ids.toolCall,
    expires_at: dateTime('Unanswered until then (INPUT_TTL_MS), the run is `expired`.'),
  }),
  'agent.handoff': obj({
    from_agent: str('The agent that handed the run over.', 'triage_agent'),
    to_agent: str("The agent in control from here on: the version the handing agent pinned (the Run's `current_agent`), with its instructions, model and tools; the history is kept.", 'billing_agent'),
    reason: { type: 'string', nullable: true, description: 'The `reason` the model gave, if any.', example: 'a refund question' },
    tool_call_id: ids.toolCall,
  }),
  'subagent.created': obj({
    subagent_id: str("The subagent's session (a child session of this run's session).", 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3C'),
    name: str('Its name.', 'researcher_1'),
    agent_id: str('The agent it runs.', 'assistant'),
    run_id: str('Its first run (its events are on its own session).', 'run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3C'),
    tool_call_id: ids.toolCall,
  }),
  'subagent.completed': obj({
    subagent_id: str("The subagent's session.", 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3C'),
    run_id: str('Its run that ended.', 'run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3C'),
    status: { type: 'string', enum: ['completed', 'failed', 'cancelled', 'expired', 'terminated'], description: "That run's terminal status." },
  }),
  'subagent.closed': obj({ subagent_id: str("The subagent's session, closed by `close_subagent`.", 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3C') }),
  'run.resumed': obj({ status: { type: 'string', enum: ['running'] } }),
  'run.cancel_requested': obj(
    {
      requested_by: str('The subject that asked for the cancel; `run:<id>` when a parent run cancels its subagent.', 'user_dev'),
      reason: {
        type: 'string',
        enum: ['parent_cancelled', 'parent_ended', 'subagent_closed'],
        description:
          'Only on a subagent run cancelled by its parent: `parent_cancelled` (the parent was cancelled), `parent_ended` (the parent ended otherwise: completed, failed, expired, terminated), `subagent_closed` (`close_subagent`).',
      },
    },
    undefined,
    ['requested_by'],
  ),
  'run.input': obj({ message_id: str('The steered user message this run took into its next model turn.', 'msg_01JD2Z4Q8M3K7P6W9X0Y1Z2A3E') }),
  'message.started': obj({ message_id: ids.message, role: { type: 'string', enum: ['user', 'assistant', 'tool', 'system'] } }),
  'message.delta': obj({
    message_id: ids.message,
    content_index: int('Index of the content part the delta extends.', 0),
    delta: str("Text to append; a message's deltas concatenated are its completed text.", 'Hello'),
  }),
  'message.completed': obj({ message_id: ids.message, content: { type: 'array', items: ref('ContentPart') } }),
  'tool.requested': obj({ tool_call_id: ids.toolCall, tool_name: ids.toolName, arguments: anyJson(`The arguments the model gave. ${MEMBER_REDACTION}`), risk }),
  'tool.started': obj({ tool_call_id: ids.toolCall, tool_name: ids.toolName, attempt: int('1 for the first attempt, counting up on retries; 0 for a call that never ran (its outcome follows at once, e.g. a rejected approval or an unknown tool).', 1) }),
  'tool.completed': obj({
    tool_call_id: ids.toolCall,
    tool_name: ids.toolName,
    result: anyJson(`What the tool returned. ${MEMBER_REDACTION}`),
    duration_ms: int('How long the call took.', 12),
  }),
  'tool.failed': obj({ tool_call_id: ids.toolCall, tool_name: ids.toolName, error: ref('ToolError'), duration_ms: int('How long the call took.', 12) }),
  'approval.requested': obj(
    {
      approval_id: ids.approval,
      tool_call_id: ids.toolCall,
      tool_name: ids.toolName,
      arguments: anyJson(`The arguments to approve. ${MEMBER_REDACTION}`),
      risk,
      expires_at: dateTime('Undecided by then, the run expires.'),
      run_id: str("Only on a parent's stream (CONTRACT 16): the subagent's run that asked; decide it through either run's approvals route.", 'run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3D'),
      subagent_id: str("Only on a parent's stream: the subagent (child session) it was asked in, directly or below it.", 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3C'),
    },
    undefined,
    ['approval_id', 'tool_call_id', 'tool_name', 'arguments', 'risk', 'expires_at'],
  ),
  'approval.accepted': obj({ approval_id: ids.approval, tool_call_id: ids.toolCall, decided_by: str('The subject that decided.', 'user_dev'), reason: nullable(str('The reason given, if any.')) }),
  'approval.rejected': obj({ approval_id: ids.approval, tool_call_id: ids.toolCall, decided_by: str('The subject that decided.', 'user_dev'), reason: nullable(str('The reason given, if any.')) }),
  usage: ref('Usage'),
  'run.finished': obj({
    status: { type: 'string', enum: TERMINAL_STATUSES },
    final_message_id: nullable(str('The final assistant message, if any.')),
    // OpenAPI 3.0: a nullable enum lists null among its values.
    termination_reason: { type: 'string', enum: [...TERMINATION_REASONS, null], nullable: true, description: 'With `terminated`: the limit that was hit; null otherwise.' },
    error: { ...RUN_ERROR, nullable: true, description: 'Why the run failed or expired; null otherwise.' },
    usage: ref('Usage'),
  }),
};

/** `run.started` -> `RunStarted`, `approval.requested` -> `ApprovalRequested`, `usage` -> `Usage`. */
export function eventSchemaStem(type: DocumentedEventType): string {
  return type
    .split(/[._]/)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('');
}

const PART_SCHEMAS: Record<string, { schema: SchemaObject; name: string }> = {
  text: { name: 'TextPart', schema: obj({ type: { type: 'string', enum: ['text'] }, text: { type: 'string', example: 'Where is my order O-1001?' } }) },
  attachment_ref: {
    name: 'AttachmentRefPart',
    schema: obj({ type: { type: 'string', enum: ['attachment_ref'] }, attachment_id: { type: 'string', example: 'att_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' } }),
  },
  tool_call: {
    name: 'ToolCallPart',
    schema: obj({ type: { type: 'string', enum: ['tool_call'] }, tool_call_id: ids.toolCall, tool_name: ids.toolName, arguments: anyJson(`The arguments the model gave. ${MEMBER_REDACTION}`) }),
  },
  tool_result: {
    name: 'ToolResultPart',
    schema: obj(
      {
        type: { type: 'string', enum: ['tool_result'] },
        tool_call_id: ids.toolCall,
        tool_name: ids.toolName,
        ok: { type: 'boolean', description: 'true: `result` is set; false: `error` is.' },
        result: anyJson(`What the tool returned (ok). ${MEMBER_REDACTION}`),
        error: obj({ code: { type: 'string', example: 'tool_failed' }, message: { oneOf: [{ type: 'string' }, ref('Redacted')] } }, 'Why it failed (not ok).'),
      },
      undefined,
      ['type', 'tool_call_id', 'tool_name', 'ok'],
    ),
  },
};

const ENVELOPE: Record<string, SchemaObject> = {
  event_id: str('The event (`evt_...`).', 'evt_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B'),
  run_id: str('The run it belongs to.', 'run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3C'),
  session_id: str("The run's session.", 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3D'),
  sequence: int('Per run, from 1, gap-free. The SSE `id` of run streams.', 42, 1),
  session_sequence: int('Per session across its runs, from 1, gap-free. The SSE `id` of session streams.', 311, 1),
  occurred_at: dateTime('When the event was committed.'),
};

/**
 * Every schema this module contributes, by component name: `RunEvent` (the union), one
 * `<Type>Event` envelope and `<Type>Data` payload per event type, `ContentPart` and its parts.
 */
export function eventComponentSchemas(): Record<string, SchemaObject> {
  const out: Record<string, SchemaObject> = { ...SHARED };
  const mapping: Record<string, string> = {};
  for (const type of DOCUMENTED_EVENT_TYPES) {
    const stem = eventSchemaStem(type);
    const dataName = type === 'usage' ? 'Usage' : `${stem}Data`;
    if (type !== 'usage') out[dataName] = EVENT_DATA_SCHEMAS[type];
    const eventName = `${stem}Event`;
    out[eventName] = obj(
      {
        event_id: ENVELOPE.event_id,
        run_id: ENVELOPE.run_id,
        session_id: ENVELOPE.session_id,
        sequence: ENVELOPE.sequence,
        session_sequence: ENVELOPE.session_sequence,
        type: { type: 'string', enum: [type] },
        occurred_at: ENVELOPE.occurred_at,
        data: ref(dataName),
      },
      `The \`${type}\` event.`,
    );
    mapping[type] = `#/components/schemas/${eventName}`;
  }
  out.RunEvent = {
    description:
      'One event: the same envelope in SSE `data:` lines and in JSON pages, with the `data` of its `type`. ' +
      'Members get the public projection (private tools redacted, secret-looking keys masked); admins the full event. Redaction never drops an event.',
    oneOf: Object.values(mapping).map((r) => ({ $ref: r })),
    discriminator: { propertyName: 'type', mapping },
  } as SchemaObject;
  const partMapping: Record<string, string> = {};
  for (const [type, p] of Object.entries(PART_SCHEMAS)) {
    out[p.name] = p.schema;
    partMapping[type] = `#/components/schemas/${p.name}`;
  }
  out.ContentPart = {
    description: 'A message content part, by `type`.',
    oneOf: Object.values(partMapping).map((r) => ({ $ref: r })),
    discriminator: { propertyName: 'type', mapping: partMapping },
  } as SchemaObject;
  return out;
}
