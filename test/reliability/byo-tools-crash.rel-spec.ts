import { ADMIN_KEY, allEvents, freshDatabase, NodeProcess, script, startNode, startRun, tempDir, TERMINAL, until, waitForRunStatus } from './rel-helpers';
import { startHttpToolServer, startMcpServer } from '../helpers/tool-servers';

/**
 * Tools you bring across a crash (CONTRACT sections 9 and 13): `kill -9` while an idempotent
 * http tool and a non-idempotent MCP tool are mid-call; a restart on the same data re-runs the
 * http tool with the same Idempotency-Key (the tool server applies one effect per key) and records
 * the MCP call as `outcome_unknown` without calling it again.
 */
describe('crash: kill -9 mid http and mcp tool calls', () => {
  const dir = tempDir();
  let db: Awaited<ReturnType<typeof freshDatabase>> = null;
  const nodes: NodeProcess[] = [];
  let http: Awaited<ReturnType<typeof startHttpToolServer>>;
  let mcp: Awaited<ReturnType<typeof startMcpServer>>;

  beforeAll(async () => {
    db = await freshDatabase();
    http = await startHttpToolServer();
    mcp = await startMcpServer();
  });
  afterAll(async () => {
    for (const n of nodes) await n.kill9();
    await http?.close();
    await mcp?.close();
    await db?.drop();
    dir.remove();
  });

  it('re-runs the idempotent http tool with the same key (one effect), marks the MCP call outcome_unknown (not called again)', async () => {
    const a = await startNode({ name: 'byo-a', dataDir: dir.path, databaseUrl: db?.url });
    nodes.push(a);
    const agent = await a.call(
      'POST',
      '/v1/agents',
      {
        id: 'crash_agent',
        tools: [
          { type: 'http', name: 'charge', description: 'Charges once per key.', parameters: { type: 'object' }, url: `${http.url}/once`, idempotent: true, timeout_ms: 20000 },
          { type: 'mcp', server: 'crm', url: mcp.url, tools: ['slow'], timeout_ms: 20000 },
        ],
      },
      {},
      ADMIN_KEY,
    );
    expect(agent.status).toBe(201);
    const session = async () => {
      const s = await a.call('POST', '/v1/sessions', { agent_id: 'crash_agent' }, {}, ADMIN_KEY);
      expect(s.status).toBe(201);
      return s.body.id as string;
    };
    const rHttp = await startRun(a, await session(), script([{ tool_calls: [{ name: 'charge', arguments: {} }] }, { text: 'charged' }]), ADMIN_KEY);
    const rMcp = await startRun(a, await session(), script([{ tool_calls: [{ name: 'crm.slow', arguments: {} }] }, { text: 'after the crash' }]), ADMIN_KEY);
    expect(rHttp.status).toBe(202);
    expect(rMcp.status).toBe(202);
    const httpRun = rHttp.body.run_id;
    const mcpRun = rMcp.body.run_id;

    await until('both tools to be mid-call', 30_000, async () => (http.effects.size >= 1 && mcp.calls.some((c) => c.name === 'slow') ? true : undefined));
    // Both calls' tool.started are durable (the http one commits it after FAST_TOOL_MS).
    await until('tool.started of both', 10_000, async () => {
      const ok = await Promise.all([httpRun, mcpRun].map(async (id) => (await allEvents(a, id, ADMIN_KEY)).some((e) => e.type === 'tool.started')));
      return ok.every(Boolean) ? true : undefined;
    });
    await a.kill9();

    const b = await startNode({ name: 'byo-b', dataDir: dir.path, databaseUrl: db?.url });
    nodes.push(b);
    const [doneHttp, doneMcp] = await Promise.all([httpRun, mcpRun].map((id) => waitForRunStatus(b, id, (r) => TERMINAL.includes(r.status), 90_000, ADMIN_KEY)));
    expect(doneHttp.status).toBe('completed');
    expect(doneMcp.status).toBe('completed');

    // http: re-run with the same key; the server applied the effect once.
    const evHttp = await allEvents(b, httpRun, ADMIN_KEY);
    const requested = evHttp.find((e) => e.type === 'tool.requested');
    const key = `${httpRun}:${requested.data.tool_call_id}`;
    const sent = http.seen.filter((s) => s.path === '/once');
    expect(sent.length).toBeGreaterThanOrEqual(2);
    expect(new Set(sent.map((s) => s.headers['idempotency-key']))).toEqual(new Set([key]));
    expect([...http.effects.entries()]).toEqual([[key, 1]]);
    expect(evHttp.find((e) => e.type === 'tool.completed').data.result).toEqual({ applied: false, key });

    // mcp: not idempotent -> outcome_unknown, shown to the model, never called again.
    const evMcp = await allEvents(b, mcpRun, ADMIN_KEY);
    const failed = evMcp.find((e) => e.type === 'tool.failed');
    expect(failed.data.error.code).toBe('outcome_unknown');
    expect(mcp.calls.filter((c) => c.name === 'slow')).toHaveLength(1);
    expect(evMcp.filter((e) => e.type === 'run.finished')).toHaveLength(1);
  }, 180_000);
});
