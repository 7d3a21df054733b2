import { Logger } from '@nestjs/common';
import { DomainError } from '../../../../common/errors/domain-error';
import { DemoTicket, DemoTicketStore } from '../../domain/demo-ticket.store';
import { AttachmentReader, ToolContext } from '../../domain/tool';
import { DefaultToolRegistry } from './default-tool-registry';
import { demoWeather, truncateUtf8 } from './demo-tools';

class MemoryTickets extends DemoTicketStore {
  readonly byKey = new Map<string, DemoTicket>();
  async createOnce(key: string, t: DemoTicket): Promise<DemoTicket> {
    if (!this.byKey.has(key)) this.byKey.set(key, t);
    return this.byKey.get(key)!;
  }
}

class FakeReader extends AttachmentReader {
  calls: Array<{ owner: unknown; id: string; max: number }> = [];
  constructor(private readonly impl: (id: string) => Awaited<ReturnType<AttachmentReader['read']>>) {
    super();
  }
  async read(owner: { tenantId: string; subjectId: string }, id: string, max: number) {
    this.calls.push({ owner, id, max });
    return this.impl(id);
  }
}

function ctx(over: Partial<ToolContext> = {}): ToolContext {
  return {
    tenantId: 'tenant_a',
    subjectId: 'user_a1',
    sessionId: 'sess_1',
    runId: 'run_1',
    toolCallId: 'call_1',
    idempotencyKey: 'run_1:call_1',
    attempt: 1,
    signal: new AbortController().signal,
    deadline: Date.now() + 60_000,
    ...over,
  };
}

describe('DefaultToolRegistry', () => {
  const registry = new DefaultToolRegistry(new MemoryTickets());

  it('lists the demo tools with their risk, visibility, idempotency and executor', () => {
    const table = Object.fromEntries(registry.all().map((t) => [t.name, [t.risk, t.visibility, t.idempotent, t.executor]]));
    expect(table).toEqual({
      get_time: ['auto', 'public', true, 'server'],
      get_weather: ['auto', 'public', true, 'server'],
      calculator: ['suggest', 'public', true, 'server'],
      get_order: ['auto', 'public', true, 'server'],
      create_ticket: ['approve', 'public', true, 'server'],
      read_attachment: ['auto', 'public', true, 'server'],
      slow_tool: ['auto', 'public', true, 'server'],
      flaky_tool: ['auto', 'public', true, 'server'],
      notify_customer: ['auto', 'public', false, 'server'],
      lookup_customer: ['auto', 'private', false, 'client'],
      schedule_follow_up: ['auto', 'public', false, 'server'],
      ask_user: ['auto', 'public', false, 'server'],
      wait: ['auto', 'public', true, 'server'],
      wait_until: ['auto', 'public', true, 'server'],
    });
    expect(Object.fromEntries(registry.all().filter((t) => t.pause).map((t) => [t.name, t.pause]))).toEqual({ ask_user: 'input', wait: 'timer', wait_until: 'timer' });
    for (const t of registry.all()) {
      expect(t.parameters).toMatchObject({ type: 'object', additionalProperties: false });
      expect(t.timeoutMs).toBeGreaterThan(0);
      expect(t).not.toHaveProperty('run');
    }
    expect(registry.get('nope')).toBeNull();
    expect(registry.get('get_order')?.name).toBe('get_order');
  });

  it.each<[string, unknown, RegExp]>([
    ['get_weather', {}, /arguments.location: is required/],
    ['get_weather', { location: 5 }, /arguments.location: must be a string/],
    ['get_weather', { location: 'Paris', unit: 'c' }, /arguments.unit: is not an allowed property/],
    ['calculator', { expression: '' }, /at least 1 characters/],
    ['get_order', null, /must be an object, got null/],
    ['get_order', 'O-1001', /must be an object, got string/],
    ['slow_tool', { ms: -1 }, /arguments.ms: must be >= 0/],
    ['slow_tool', { ms: 1.5 }, /must be an integer/],
    ['flaky_tool', { fail_times: '2' }, /must be an integer, got string/],
    ['create_ticket', { order_id: 'O-1001' }, /arguments.reason: is required/],
    ['get_time', { now: true }, /not an allowed property/],
  ])('%s with %j -> invalid_tool_arguments', async (name, args, message) => {
    const outcome = await registry.execute(name, args, ctx());
    expect(outcome).toEqual({ ok: false, error: { code: 'invalid_tool_arguments', message: expect.stringMatching(message), retryable: false } });
  });

  it('unknown tool -> tool_not_found', async () => {
    await expect(registry.execute('rm_rf', {}, ctx())).resolves.toEqual({
      ok: false,
      error: { code: 'tool_not_found', message: 'no tool named "rm_rf"', retryable: false },
    });
  });

  it('never executes a client tool', async () => {
    await expect(registry.execute('lookup_customer', { email: 'a@b.c' }, ctx())).resolves.toMatchObject({
      ok: false,
      error: { code: 'tool_failed', message: expect.stringContaining('client tool') },
    });
  });

  it('get_time answers ISO time in UTC', async () => {
    const before = Date.now();
    const outcome = await registry.execute('get_time', {}, ctx());
    expect(outcome.ok).toBe(true);
    const r = (outcome as { result: { iso: string; timezone: string; unix_ms: number } }).result;
    expect(r.timezone).toBe('UTC');
    expect(r.iso).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Date.parse(r.iso)).toBeGreaterThanOrEqual(before - 1);
  });

  it('get_weather is deterministic per location and differs between locations', async () => {
    const a = await registry.execute('get_weather', { location: 'Paris' }, ctx());
    const b = await registry.execute('get_weather', { location: 'Paris' }, ctx());
    expect(a).toEqual(b);
    expect(a).toEqual({ ok: true, result: demoWeather('Paris') });
    const temps = new Set(['Paris', 'Oslo', 'Lima', 'Cairo', 'Tokyo', 'Quito'].map((l) => JSON.stringify(demoWeather(l))));
    expect(temps.size).toBeGreaterThan(1);
    const w = demoWeather('Paris');
    expect(w.temperature_c).toEqual(expect.any(Number));
    expect(w.temperature_c as number).toBeGreaterThanOrEqual(-10);
    expect(w.temperature_c as number).toBeLessThanOrEqual(35);
  });

  it.each<[string, unknown]>([
    ['2 + 3 * 4', { ok: true, result: { expression: '2 + 3 * 4', result: 14 } }],
    ['1 / 0', { ok: false, error: { code: 'tool_failed', message: 'division by zero', retryable: false } }],
  ])('calculator %s', async (expression, expected) => {
    await expect(registry.execute('calculator', { expression }, ctx())).resolves.toEqual(expected);
  });

  it.each<[string, Record<string, unknown>]>([
    ['O-1001', { order_id: 'O-1001', status: 'paid', paid: true, shipped: false }],
    ['O-1002', { order_id: 'O-1002', status: 'shipped', paid: true, shipped: true }],
    ['O-7777', { status: 'not_found', order_id: 'O-7777' }],
    ['constructor', { status: 'not_found', order_id: 'constructor' }],
    ['__proto__', { status: 'not_found', order_id: '__proto__' }],
  ])('get_order %s', async (order_id, expected) => {
    const outcome = await registry.execute('get_order', { order_id }, ctx());
    expect(outcome).toMatchObject({ ok: true, result: expected });
  });

  it('create_ticket returns the same ticket for the same idempotency key', async () => {
    const r1 = await registry.execute('create_ticket', { order_id: 'O-1001', reason: 'late' }, ctx({ idempotencyKey: 'run_9:call_9' }));
    const r2 = await registry.execute('create_ticket', { order_id: 'O-1001', reason: 'late' }, ctx({ idempotencyKey: 'run_9:call_9' }));
    const r3 = await registry.execute('create_ticket', { order_id: 'O-1001', reason: 'late' }, ctx({ idempotencyKey: 'run_9:call_10' }));
    expect(r1).toMatchObject({ ok: true, result: { ticket_id: expect.stringMatching(/^T-[0-9A-Z]+$/), order_id: 'O-1001', status: 'open' } });
    expect(r2).toEqual(r1);
    expect((r3 as { result: { ticket_id: string } }).result.ticket_id).not.toBe((r1 as { result: { ticket_id: string } }).result.ticket_id);
  });

  describe('slow_tool', () => {
    it('waits ms, then answers', async () => {
      const started = Date.now();
      await expect(registry.execute('slow_tool', { ms: 60 }, ctx())).resolves.toEqual({ ok: true, result: { slept_ms: 60 } });
      expect(Date.now() - started).toBeGreaterThanOrEqual(55);
    });

    it('stops at the run deadline with tool_timeout', async () => {
      const started = Date.now();
      const outcome = await registry.execute('slow_tool', { ms: 10_000 }, ctx({ deadline: Date.now() + 80 }));
      expect(outcome).toMatchObject({ ok: false, error: { code: 'tool_timeout', message: expect.stringMatching(/timed out/) } });
      expect(Date.now() - started).toBeLessThan(1000);
    });

    it('stops at once when the signal aborts', async () => {
      const ac = new AbortController();
      setTimeout(() => ac.abort(), 50);
      const started = Date.now();
      const outcome = await registry.execute('slow_tool', { ms: 10_000 }, ctx({ signal: ac.signal }));
      expect(outcome).toMatchObject({ ok: false, error: { code: 'tool_timeout', message: 'slow_tool was cancelled' } });
      expect(Date.now() - started).toBeLessThan(1000);
    });

    it('a deadline already passed fails without running', async () => {
      await expect(registry.execute('slow_tool', { ms: 0 }, ctx({ deadline: Date.now() - 1 }))).resolves.toMatchObject({
        ok: false,
        error: { code: 'tool_timeout' },
      });
    });

    it("uses the tool's own timeout when it is sooner than the deadline", async () => {
      const tickets = new MemoryTickets();
      const r = new DefaultToolRegistry(tickets);
      (r as unknown as { tools: Map<string, { timeoutMs: number }> }).tools.get('slow_tool')!.timeoutMs = 50;
      const started = Date.now();
      await expect(r.execute('slow_tool', { ms: 5_000 }, ctx())).resolves.toMatchObject({ ok: false, error: { code: 'tool_timeout' } });
      expect(Date.now() - started).toBeLessThan(1000);
    });
  });

  it.each<[number, number, boolean]>([
    [2, 1, false],
    [2, 2, false],
    [2, 3, true],
    [0, 1, true],
  ])('flaky_tool fail_times=%i attempt=%i -> ok=%s', async (fail_times, attempt, ok) => {
    const outcome = await registry.execute('flaky_tool', { fail_times }, ctx({ attempt }));
    if (ok) expect(outcome).toEqual({ ok: true, result: { ok: true, attempt } });
    else expect(outcome).toMatchObject({ ok: false, error: { code: 'tool_failed', retryable: true } });
  });

  describe('read_attachment', () => {
    it('is tool_failed when no attachment reader is wired', async () => {
      await expect(registry.execute('read_attachment', { attachment_id: 'att_1' }, ctx())).resolves.toMatchObject({
        ok: false,
        error: { code: 'tool_failed', message: expect.stringContaining('not available') },
      });
    });

    it("reads the caller's attachment, bounded to 32 KiB", async () => {
      const big = 'é'.repeat(20_000); // 40,000 bytes of UTF-8
      const reader = new FakeReader((id) => ({ attachment_id: id, filename: 'a.txt', media_type: 'text/plain', size_bytes: 40_000, sha256: 'ab', text: big }));
      const r = new DefaultToolRegistry(new MemoryTickets(), reader);
      const outcome = await r.execute('read_attachment', { attachment_id: 'att_1' }, ctx());
      expect(reader.calls).toEqual([{ owner: { tenantId: 'tenant_a', subjectId: 'user_a1' }, id: 'att_1', max: 32 * 1024 }]);
      const res = (outcome as { ok: true; result: { text: string; truncated: boolean; filename: string } }).result;
      expect(outcome.ok).toBe(true);
      expect(res.filename).toBe('a.txt');
      expect(res.truncated).toBe(true);
      expect(Buffer.byteLength(res.text)).toBeLessThanOrEqual(32 * 1024);
      expect(res.text).toBe('é'.repeat(16 * 1024));
    });

    it('answers metadata only for binary attachments', async () => {
      const reader = new FakeReader((id) => ({ attachment_id: id, filename: 'p.png', media_type: 'image/png', size_bytes: 10, sha256: 'cd', bytes: Buffer.alloc(10) }));
      const r = new DefaultToolRegistry(new MemoryTickets(), reader);
      await expect(r.execute('read_attachment', { attachment_id: 'att_2' }, ctx())).resolves.toMatchObject({
        ok: true,
        result: { attachment_id: 'att_2', media_type: 'image/png', text: null, truncated: false },
      });
    });

    it.each<[string, boolean]>([
      ['attachment_not_found', false],
      ['attachment_not_ready', true],
    ])('a %s DomainError becomes tool_failed naming the code', async (code, retryable) => {
      const reader = new FakeReader(() => {
        throw new DomainError(code as 'attachment_not_found', 'nope');
      });
      const r = new DefaultToolRegistry(new MemoryTickets(), reader);
      await expect(r.execute('read_attachment', { attachment_id: 'att_3' }, ctx())).resolves.toEqual({
        ok: false,
        error: { code: 'tool_failed', message: `${code}: nope`, retryable },
      });
    });
  });

  it('never throws, even when a tool crashes', async () => {
    const logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const crashing = new (class extends DemoTicketStore {
      async createOnce(): Promise<DemoTicket> {
        throw new Error('db down');
      }
    })();
    const r = new DefaultToolRegistry(crashing);
    await expect(r.execute('create_ticket', { order_id: 'O-1', reason: 'x' }, ctx())).resolves.toEqual({
      ok: false,
      error: { code: 'tool_failed', message: 'create_ticket failed unexpectedly', retryable: true },
    });
    expect(logged).toHaveBeenCalledWith(expect.stringContaining('db down'));
    logged.mockRestore();
  });

  it.each<[string, number, string, boolean]>([
    ['abc', 10, 'abc', false],
    ['abcdef', 3, 'abc', true],
    ['éé', 3, 'é', true],
    ['😀x', 3, '', true],
  ])('truncateUtf8(%j, %i)', (text, max, out, truncated) => {
    expect(truncateUtf8(text, max)).toEqual({ text: out, truncated });
  });
});
