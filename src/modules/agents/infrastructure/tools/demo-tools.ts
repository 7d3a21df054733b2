import { createHash } from 'node:crypto';
import { ulid } from 'ulid';
import { DomainError } from '../../../../common/errors/domain-error';
import { DemoTicketStore } from '../../domain/demo-ticket.store';
import { AttachmentReader, FollowUpScheduler, ToolContext, ToolDefinition } from '../../domain/tool';
import { raceAbort, sleep } from '../abort';
import { CALCULATOR_MAX_LENGTH, CalculatorError, evaluate } from './calculator';
import { JsonSchema } from './json-schema';

/** A failure a tool reports on purpose (becomes a `tool_failed` outcome). */
export class ToolFailure extends Error {
  constructor(
    message: string,
    readonly retryable = false,
  ) {
    super(message);
    this.name = 'ToolFailure';
  }
}

/** A server tool: its definition and its implementation. `ctx.signal` also fires at the tool's own timeout. */
export interface ToolImplementation extends ToolDefinition {
  parameters: JsonSchema;
  run(args: Record<string, unknown>, ctx: ToolContext): Promise<unknown>;
}

export interface DemoToolDeps {
  tickets: DemoTicketStore;
  /** The attachments module's reader, when it is wired. */
  attachments: () => AttachmentReader | null;
  /** The automations module's scheduler, when it is wired. */
  followUps?: () => FollowUpScheduler | null;
}

export const READ_ATTACHMENT_MAX_BYTES = 32 * 1024;

/** Demo orders: O-1001 paid and not shipped, O-1002 paid and shipped, O-1003 awaiting payment. */
export const DEMO_ORDERS: Record<string, Record<string, unknown>> = {
  'O-1001': {
    order_id: 'O-1001',
    status: 'paid',
    paid: true,
    shipped: false,
    shipped_at: null,
    placed_at: '2026-11-20T10:15:00.000Z',
    total: { amount: '129.90', currency: 'EUR' },
    items: [{ sku: 'KB-42', name: 'Mechanical keyboard', quantity: 1 }],
  },
  'O-1002': {
    order_id: 'O-1002',
    status: 'shipped',
    paid: true,
    shipped: true,
    shipped_at: '2026-11-22T08:00:00.000Z',
    tracking_number: 'TRK-889301',
    placed_at: '2026-11-19T16:40:00.000Z',
    total: { amount: '24.50', currency: 'EUR' },
    items: [{ sku: 'MS-7', name: 'Wireless mouse', quantity: 1 }],
  },
  'O-1003': {
    order_id: 'O-1003',
    status: 'awaiting_payment',
    paid: false,
    shipped: false,
    shipped_at: null,
    placed_at: '2026-11-29T12:00:00.000Z',
    total: { amount: '9.99', currency: 'EUR' },
    items: [{ sku: 'CB-1', name: 'USB-C cable', quantity: 1 }],
  },
};

const CONDITIONS = ['sunny', 'partly cloudy', 'cloudy', 'light rain', 'rain', 'thunderstorms', 'fog', 'snow', 'windy'];

/** Fake but deterministic weather: the same location string always gives the same report. */
export function demoWeather(location: string): Record<string, unknown> {
  const normalised = location.trim().toLowerCase().replace(/\s+/g, ' ');
  const h = createHash('sha256').update(normalised).digest();
  return {
    location: location.trim(),
    temperature_c: (h[0] % 46) - 10,
    conditions: CONDITIONS[h[1] % CONDITIONS.length],
    humidity_pct: 20 + (h[2] % 76),
    wind_kph: h[3] % 61,
    source: 'demo',
  };
}

/** Cuts `text` to at most `maxBytes` of UTF-8 without splitting a character. */
export function truncateUtf8(text: string, maxBytes: number): { text: string; truncated: boolean } {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= maxBytes) return { text, truncated: false };
  let end = maxBytes;
  while (end > 0 && (buf[end] & 0xc0) === 0x80) end--; // back off to a character boundary
  return { text: buf.subarray(0, end).toString('utf8'), truncated: true };
}

const obj = (properties: Record<string, JsonSchema>, required: string[]): JsonSchema => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});

export function buildDemoTools(deps: DemoToolDeps): ToolImplementation[] {
  return [
    {
      name: 'schedule_follow_up',
      description:
        'Schedules a follow-up in this session: at a time (`at`, ISO 8601) or on a cron schedule (`cron`, five fields, in `timezone`, default UTC); ' +
        'then `input` arrives as a user message of this session (CONTRACT section 17). Returns the automation id and its next run.',
      parameters: obj(
        {
          at: { type: 'string', minLength: 1, maxLength: 64, description: 'One-time: an ISO 8601 time in the future.' },
          cron: { type: 'string', minLength: 1, maxLength: 200, description: 'Periodic: a five-field cron expression.' },
          timezone: { type: 'string', minLength: 1, maxLength: 64, description: 'IANA time zone of `cron` (default UTC).' },
          input: { type: 'string', minLength: 1, maxLength: 20_000, description: 'What the follow-up says to the session.' },
        },
        ['input'],
      ),
      risk: 'auto',
      visibility: 'public',
      // Not idempotent: a retry would schedule a second follow-up.
      idempotent: false,
      executor: 'server',
      timeoutMs: 10_000,
      run: async (args, ctx) => {
        const scheduler = deps.followUps?.() ?? null;
        if (!scheduler) throw new ToolFailure('follow-ups are not available on this server');
        if ((args.at === undefined) === (args.cron === undefined)) throw new ToolFailure('give exactly one of at (a time) or cron (a schedule)');
        if (args.at !== undefined && args.timezone !== undefined) throw new ToolFailure('timezone goes with cron, not at');
        try {
          return await scheduler.schedule(
            { tenantId: ctx.tenantId, subjectId: ctx.subjectId, sessionId: ctx.sessionId, toolCallId: ctx.toolCallId },
            { at: args.at as string | undefined, cron: args.cron as string | undefined, timezone: args.timezone as string | undefined, input: String(args.input) },
          );
        } catch (err) {
          if (err instanceof DomainError) throw new ToolFailure(err.message);
          throw err;
        }
      },
    },
    {
      name: 'get_time',
      description: 'The current date and time (ISO 8601, UTC).',
      parameters: obj({}, []),
      risk: 'auto',
      visibility: 'public',
      idempotent: true,
      executor: 'server',
      timeoutMs: 5_000,
      run: async () => {
        const now = new Date();
        return { iso: now.toISOString(), timezone: 'UTC', unix_ms: now.getTime() };
      },
    },
    {
      name: 'get_weather',
      description: 'Current weather for a location (demo data, deterministic per location).',
      parameters: obj({ location: { type: 'string', minLength: 1, maxLength: 100, description: 'City or place, e.g. "Paris".' } }, ['location']),
      risk: 'auto',
      visibility: 'public',
      idempotent: true,
      executor: 'server',
      timeoutMs: 5_000,
      run: async (args) => {
        const location = String(args.location);
        if (location.trim() === '') throw new ToolFailure('location must not be blank');
        return demoWeather(location);
      },
    },
    {
      name: 'calculator',
      description: 'Evaluates an arithmetic expression: numbers, + - * / ^, parentheses, unary minus.',
      parameters: obj(
        { expression: { type: 'string', minLength: 1, maxLength: CALCULATOR_MAX_LENGTH, description: 'For example "(2 + 3) * 4 ^ 2".' } },
        ['expression'],
      ),
      risk: 'suggest',
      visibility: 'public',
      idempotent: true,
      executor: 'server',
      timeoutMs: 5_000,
      run: async (args) => {
        const expression = String(args.expression);
        try {
          return { expression, result: evaluate(expression) };
        } catch (err) {
          if (err instanceof CalculatorError) throw new ToolFailure(err.message);
          throw err;
        }
      },
    },
    {
      name: 'get_order',
      description: 'Looks an order up by its id (e.g. "O-1001"): payment and shipping status, items, total.',
      parameters: obj({ order_id: { type: 'string', minLength: 1, maxLength: 64, description: 'Order id such as "O-1001".' } }, ['order_id']),
      risk: 'auto',
      visibility: 'public',
      idempotent: true,
      executor: 'server',
      timeoutMs: 5_000,
      run: async (args) => {
        const id = String(args.order_id).trim();
        return Object.hasOwn(DEMO_ORDERS, id) ? structuredClone(DEMO_ORDERS[id]) : { status: 'not_found', order_id: id };
      },
    },
    {
      name: 'create_ticket',
      description: 'Opens a support ticket for an order. Needs a human approval; idempotent per tool call.',
      parameters: obj(
        {
          order_id: { type: 'string', minLength: 1, maxLength: 64, description: 'Order id such as "O-1001".' },
          reason: { type: 'string', minLength: 1, maxLength: 1000, description: 'Why the ticket is opened.' },
        },
        ['order_id', 'reason'],
      ),
      risk: 'approve',
      visibility: 'public',
      idempotent: true,
      executor: 'server',
      timeoutMs: 10_000,
      run: async (args, ctx) => {
        const t = await raceAbort(
          deps.tickets.createOnce(ctx.idempotencyKey, {
            ticketId: `T-${ulid()}`,
            orderId: String(args.order_id),
            reason: String(args.reason),
            tenantId: ctx.tenantId,
            createdAt: new Date(),
          }),
          ctx.signal,
        );
        return { ticket_id: t.ticketId, order_id: t.orderId, reason: t.reason, status: 'open', created_at: t.createdAt.toISOString() };
      },
    },
    {
      name: 'read_attachment',
      description: `Reads one of the caller's ready attachments: metadata and, for text types, up to ${READ_ATTACHMENT_MAX_BYTES / 1024} KiB of text.`,
      parameters: obj({ attachment_id: { type: 'string', minLength: 1, maxLength: 64, description: 'An attachment id (att_...).' } }, ['attachment_id']),
      risk: 'auto',
      visibility: 'public',
      idempotent: true,
      executor: 'server',
      timeoutMs: 15_000,
      run: async (args, ctx) => {
        const reader = deps.attachments();
        if (!reader) throw new ToolFailure('attachments are not available on this server');
        try {
          const a = await raceAbort(
            reader.read({ tenantId: ctx.tenantId, subjectId: ctx.subjectId }, String(args.attachment_id), READ_ATTACHMENT_MAX_BYTES),
            ctx.signal,
          );
          const out: Record<string, unknown> = {
            attachment_id: a.attachment_id,
            filename: a.filename,
            media_type: a.media_type,
            size_bytes: a.size_bytes,
            sha256: a.sha256,
          };
          if (typeof a.text === 'string') {
            const cut = truncateUtf8(a.text, READ_ATTACHMENT_MAX_BYTES);
            out.text = cut.text;
            out.truncated = cut.truncated || a.truncated === true;
          } else {
            out.text = null;
            out.truncated = false;
            out.note = 'binary content is not shown; only metadata';
          }
          return out;
        } catch (err) {
          if (err instanceof DomainError) throw new ToolFailure(`${err.code}: ${err.message}`, err.code === 'attachment_not_ready');
          throw err;
        }
      },
    },
    {
      name: 'slow_tool',
      description: 'Waits the given number of milliseconds, then answers (for timeout and cancel tests).',
      parameters: obj({ ms: { type: 'integer', minimum: 0, maximum: 600_000, description: 'How long to wait.' } }, ['ms']),
      risk: 'auto',
      visibility: 'public',
      idempotent: true,
      executor: 'server',
      timeoutMs: 600_000,
      run: async (args, ctx) => {
        const ms = Number(args.ms);
        await sleep(ms, ctx.signal);
        return { slept_ms: ms };
      },
    },
    {
      name: 'notify_customer',
      description:
        'Sends a message to the customer of an order (demo: nothing leaves the machine). Not idempotent: after a crash mid-call its outcome is unknown, never guessed.',
      parameters: obj(
        {
          order_id: { type: 'string', minLength: 1, maxLength: 64, description: 'Order id, e.g. O-1001.' },
          message: { type: 'string', minLength: 1, maxLength: 2000, description: 'What to tell the customer.' },
          ms: { type: 'integer', minimum: 0, maximum: 60_000, description: 'Simulated delivery time (for crash tests).' },
        },
        ['order_id', 'message'],
      ),
      risk: 'auto',
      visibility: 'public',
      idempotent: false,
      executor: 'server',
      timeoutMs: 65_000,
      run: async (args, ctx) => {
        await sleep(Number(args.ms ?? 0), ctx.signal);
        return { delivered: true, order_id: String(args.order_id), channel: 'email' };
      },
    },
    {
      name: 'flaky_tool',
      description: 'Fails (retryably) while the attempt number is <= fail_times, then succeeds (for retry tests).',
      parameters: obj({ fail_times: { type: 'integer', minimum: 0, maximum: 100, description: 'How many attempts fail.' } }, ['fail_times']),
      risk: 'auto',
      visibility: 'public',
      idempotent: true,
      executor: 'server',
      timeoutMs: 5_000,
      run: async (args, ctx) => {
        const failTimes = Number(args.fail_times);
        if (ctx.attempt <= failTimes) throw new ToolFailure(`flaky_tool failed on attempt ${ctx.attempt} of ${failTimes} failing attempts`, true);
        return { ok: true, attempt: ctx.attempt };
      },
    },
    {
      name: 'lookup_customer',
      description: "Looks a customer up by e-mail in the client's own CRM (executed by the client).",
      parameters: obj(
        { email: { type: 'string', minLength: 3, maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+$', description: 'Customer e-mail address.' } },
        ['email'],
      ),
      risk: 'auto',
      visibility: 'private',
      idempotent: false,
      executor: 'client',
      timeoutMs: 60_000,
      run: async () => {
        throw new ToolFailure('client tool: executed by the client, not the server');
      },
    },
  ];
}
