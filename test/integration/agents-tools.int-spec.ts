import { DataSource } from 'typeorm';
import { UnitOfWork } from '../../src/common/database/unit-of-work';
import { ToolContext, ToolOutcome, ToolRegistry } from '../../src/modules/agents/domain/tool';
import { DefaultToolRegistry } from '../../src/modules/agents/infrastructure/tools/default-tool-registry';
import { DemoTicketTypeormStore } from '../../src/modules/agents/infrastructure/tools/demo-ticket.typeorm-store';
import { startTestApp, TestApp } from '../helpers/test-app';

jest.setTimeout(60_000);

function ctx(key: string, over: Partial<ToolContext> = {}): ToolContext {
  const [runId, toolCallId] = key.split(':');
  return {
    tenantId: 'tenant_a',
    subjectId: 'user_a1',
    sessionId: 'sess_x',
    runId,
    toolCallId,
    idempotencyKey: key,
    attempt: 1,
    signal: new AbortController().signal,
    deadline: Date.now() + 30_000,
    ...over,
  };
}

const ticketOf = (o: ToolOutcome) => {
  if (!o.ok) throw new Error(`expected ok, got ${JSON.stringify(o)}`);
  return o.result as { ticket_id: string; order_id: string; reason: string; created_at: string };
};

describe('create_ticket against the database', () => {
  let t: TestApp;
  let registry: ToolRegistry;
  let db: DataSource;

  beforeAll(async () => {
    t = await startTestApp();
    registry = t.app.get(ToolRegistry);
    db = t.app.get(DataSource);
  });
  afterAll(async () => {
    await t.close();
  });

  const count = async (key: string) => Number((await db.query(`SELECT count(*) AS n FROM demo_tickets WHERE idempotency_key = $1`, [key]))[0].n);

  it('the same key gives the same ticket and one row', async () => {
    const key = 'run_int1:call_1';
    const a = ticketOf(await registry.execute('create_ticket', { order_id: 'O-1001', reason: 'late' }, ctx(key)));
    const b = ticketOf(await registry.execute('create_ticket', { order_id: 'O-1001', reason: 'late' }, ctx(key, { attempt: 2 })));
    expect(a.ticket_id).toMatch(/^T-[0-9A-Z]{26}$/);
    expect(b).toEqual(a);
    await expect(count(key)).resolves.toBe(1);
  });

  it('a retry with other arguments still returns the first ticket (idempotent by key)', async () => {
    const key = 'run_int2:call_1';
    const a = ticketOf(await registry.execute('create_ticket', { order_id: 'O-1001', reason: 'first' }, ctx(key)));
    const b = ticketOf(await registry.execute('create_ticket', { order_id: 'O-2002', reason: 'second' }, ctx(key)));
    expect(b).toEqual(a);
    expect(b.reason).toBe('first');
  });

  it('different keys give different tickets', async () => {
    const a = ticketOf(await registry.execute('create_ticket', { order_id: 'O-1001', reason: 'x' }, ctx('run_int3:call_1')));
    const b = ticketOf(await registry.execute('create_ticket', { order_id: 'O-1001', reason: 'x' }, ctx('run_int3:call_2')));
    expect(b.ticket_id).not.toBe(a.ticket_id);
  });

  it('10 concurrent executions with one key create exactly one ticket', async () => {
    const key = 'run_int4:call_1';
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, () => registry.execute('create_ticket', { order_id: 'O-1001', reason: 'race' }, ctx(key))),
    );
    const ids = new Set(outcomes.map((o) => ticketOf(o).ticket_id));
    expect(ids.size).toBe(1);
    await expect(count(key)).resolves.toBe(1);
  });

  it('a fresh registry (a restarted process: no memory) returns the stored ticket', async () => {
    const key = 'run_int5:call_1';
    const a = ticketOf(await registry.execute('create_ticket', { order_id: 'O-1001', reason: 'restart' }, ctx(key)));
    const fresh = new DefaultToolRegistry(new DemoTicketTypeormStore(t.app.get(UnitOfWork)));
    const b = ticketOf(await fresh.execute('create_ticket', { order_id: 'O-1001', reason: 'restart' }, ctx(key)));
    expect(b).toEqual(a);
    const rows = await db.query(`SELECT ticket_id, order_id, tenant_id FROM demo_tickets WHERE idempotency_key = $1`, [key]);
    expect(rows).toEqual([{ ticket_id: a.ticket_id, order_id: 'O-1001', tenant_id: 'tenant_a' }]);
  });
});

describe('read_attachment wired to the attachments module', () => {
  it("reads through the app's AttachmentReader: an unknown id is tool_failed naming attachment_not_found", async () => {
    const t = await startTestApp();
    try {
      const outcome = await t.app.get(ToolRegistry).execute('read_attachment', { attachment_id: 'att_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }, ctx('run_att:call_1'));
      expect(outcome).toMatchObject({ ok: false, error: { code: 'tool_failed', message: expect.stringMatching(/^attachment_not_found: /) } });
    } finally {
      await t.close();
    }
  });
});

describe('create_ticket across a real process restart', () => {
  it('a new app on the same database returns the ticket created before the restart', async () => {
    const first = await startTestApp();
    const key = 'run_restart:call_1';
    let second: TestApp | null = null;
    try {
      const a = ticketOf(await first.app.get(ToolRegistry).execute('create_ticket', { order_id: 'O-1001', reason: 'r' }, ctx(key)));
      await first.app.close();
      // Same database: the PostgreSQL database of the first app, or its embedded data directory.
      second = await startTestApp(first.databaseUrl === 'embedded' ? { DATA_DIR: first.dataDir } : { DATABASE_URL: first.databaseUrl });
      const b = ticketOf(await second.app.get(ToolRegistry).execute('create_ticket', { order_id: 'O-1001', reason: 'r' }, ctx(key)));
      expect(b).toEqual(a);
    } finally {
      if (second) await second.close();
      await first.close().catch(() => undefined);
    }
  }, 180_000); // two app starts on one database: over 60 s at load 8 (embedded)
});
