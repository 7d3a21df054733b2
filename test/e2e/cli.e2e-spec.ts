import { execFileSync } from 'node:child_process';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChildResult, ROOT, runNode } from '../helpers/child-process';
import { createSession, isTerminal, script, startRun, userInput, waitForRun } from '../helpers/runs';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';
import { WebhookReceiver } from '../helpers/webhook-receiver';

const CLI = join(ROOT, 'dist', 'clients', 'cli', 'agent-cli.js');
type CliResult = ChildResult;

/** Runs the built CLI as a child process; `stdin` is written and then closed. */
function runCli(args: string[], opts: { url: string; key?: string; stdin?: string; timeoutMs?: number }): Promise<CliResult> {
  const env = { PATH: process.env.PATH, AGENT_API_URL: opts.url, AGENT_API_KEY: opts.key ?? KEYS.adminA, NO_COLOR: '1' };
  return runNode([CLI, ...args], { env, stdin: opts.stdin, timeoutMs: opts.timeoutMs ?? 25_000 });
}

/**
 * A pass-through HTTP proxy in front of the app that cuts the first SSE connection of a run
 * after it has forwarded `cutAfterDeltas` message.delta frames (a dropped connection mid-run).
 */
async function startCuttingProxy(target: string, cutAfterDeltas: number): Promise<{ url: string; eventRequests: IncomingHttpHeaders[]; cuts: number; close: () => Promise<void> }> {
  const upstream = new URL(target);
  const state = { eventRequests: [] as IncomingHttpHeaders[], cuts: 0 };
  const server: Server = createServer((req, res) => {
    const isStream = /\/events/.test(req.url ?? '') && String(req.headers.accept).includes('text/event-stream');
    if (isStream) state.eventRequests.push(req.headers);
    const cut = isStream && state.eventRequests.length === 1;
    const up = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (upRes) => {
      res.writeHead(upRes.statusCode ?? 502, upRes.headers);
      let deltas = 0;
      upRes.on('data', (chunk: Buffer) => {
        res.write(chunk);
        if (!cut) return;
        deltas += (chunk.toString().match(/event: message\.delta/g) ?? []).length;
        if (deltas >= cutAfterDeltas) {
          state.cuts++;
          upRes.destroy();
          res.socket?.destroy();
        }
      });
      upRes.on('end', () => res.end());
      upRes.on('error', () => res.destroy());
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get eventRequests() {
      return state.eventRequests;
    },
    get cuts() {
      return state.cuts;
    },
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

describe('agent-api CLI (child process against a test app)', () => {
  let t: TestApp;
  beforeAll(async () => {
    // The CLI runs as built JavaScript, as users run it: compile clients/ (fast, swc).
    execFileSync(join(ROOT, 'node_modules', '.bin', 'swc'), ['clients', '-d', 'dist', '--quiet'], { cwd: ROOT, stdio: 'pipe' });
    t = await startTestApp();
  }, 60_000);
  afterAll(async () => {
    await t.close();
  });

  const newSession = async (key: string = KEYS.adminA): Promise<string> => {
    const r = await runCli(['sessions', 'create', '--title', 'cli test'], { url: t.url, key });
    expect(r.code).toBe(0);
    return r.stdout.trim();
  };

  it('prints help, and rejects unknown commands with exit status 2', async () => {
    const help = await runCli(['--help'], { url: t.url });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('agent-api chat <session> "text"');
    expect(help.stdout).toContain('AGENT_API_URL');
    // Busy sessions steer by default: --enqueue is the way to queue instead, nothing fails with session_busy.
    expect(help.stdout).not.toContain('session_busy');
    expect(help.stdout).toMatch(/--enqueue +chat: when the session has an active run, queue a new run behind it instead of\s+steering the active one/);
    // Two different checks, two different names: the server's chain, an export file offline.
    expect(help.stdout).toContain('agent-api audit check-chain');
    expect(help.stdout).toContain('agent-api audit verify --file export.ndjson');
    const bad = await runCli(['frobnicate'], { url: t.url });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('unknown command "frobnicate"');
  });

  it('creates and lists sessions', async () => {
    const id = await newSession();
    expect(id).toMatch(/^sess_/);
    const list = await runCli(['sessions', 'list'], { url: t.url });
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(id);
    expect(list.stdout).toContain('cli test');
    const json = await runCli(['sessions', 'list', '--json'], { url: t.url });
    expect(JSON.parse(json.stdout).data.map((s: { id: string }) => s.id)).toContain(id);
  });

  it('sessions subagents: the child sessions of the example researcher (agents/research_lead), paged with --limit and --after', async () => {
    const sid = await createSession(t, KEYS.memberA1, { agent_id: 'research_lead' });
    const spawn = (name: string) => ({ name: 'create_subagent', arguments: { name, instructions: script([{ text: `${name} done` }]) } });
    const res = await startRun(t, KEYS.memberA1, sid, {
      input: userInput(script([{ tool_calls: [spawn('prices'), spawn('supply'), spawn('demand')] }, { tool_calls: [{ name: 'wait_for_subagents', arguments: {} }] }, { text: 'combined' }])),
    });
    expect(res.status).toBe(202);
    const parent = await waitForRun(t, KEYS.memberA1, res.body.run_id, isTerminal, 30_000);
    expect(parent.status).toBe('completed');

    const list = await runCli(['sessions', 'subagents', sid], { url: t.url, key: KEYS.memberA1 });
    expect(list.code).toBe(0);
    const lines = list.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+NAME\s+STATUS\s+WORK\s+AGENT\s+PARENT RUN\s+CREATED$/);
    // Oldest first, each with its name, status, agent and the run that created it.
    const rows = lines.slice(1).map((l) => l.split(/\s+/));
    expect(rows.map(([, name, status, work, agent, version, parentRun]) => [name, status, work, `${agent} ${version}`, parentRun])).toEqual([
      ['prices', 'active', 'idle', 'research_lead v1', parent.id],
      ['supply', 'active', 'idle', 'research_lead v1', parent.id],
      ['demand', 'active', 'idle', 'research_lead v1', parent.id],
    ]);
    // Paged like the other lists: --limit, then --after the id it prints.
    const first = await runCli(['sessions', 'subagents', sid, '--limit', '2'], { url: t.url, key: KEYS.memberA1 });
    expect(first.stdout).not.toContain('demand');
    const hint = /next page: add --after (sess_\S+)/.exec(first.stdout);
    expect(hint).not.toBeNull();
    const next = await runCli(['sessions', 'subagents', sid, '--limit', '2', '--after', hint![1]], { url: t.url, key: KEYS.memberA1 });
    expect(next.stdout).toContain('demand');
    expect(next.stdout).not.toMatch(/prices|supply|next page/);
    const asJson = JSON.parse((await runCli(['sessions', 'subagents', sid, '--json'], { url: t.url, key: KEYS.memberA1 })).stdout);
    expect(asJson).toMatchObject({ object: 'list', has_more: false });
    expect(asJson.data.map((x: any) => [x.parent_session_id, x.subagent.name])).toEqual([[sid, 'prices'], [sid, 'supply'], [sid, 'demand']]);
    // A session without subagents says so; another member's session is not found.
    const none = await runCli(['sessions', 'subagents', asJson.data[0].id], { url: t.url, key: KEYS.memberA1 });
    expect(none.stdout).toContain('no subagents');
    const other = await runCli(['sessions', 'subagents', sid], { url: t.url, key: KEYS.memberA2 });
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('session_not_found');
    expect((await runCli(['sessions', 'subagents'], { url: t.url })).code).toBe(2);
  }, 60_000);

  it('chat: streams the order scenario, asks for the approval inline, answered y on stdin', async () => {
    const session = await newSession(KEYS.memberA1);
    const r = await runCli(['chat', session, 'Please help with order O-1001'], { url: t.url, key: KEYS.memberA1, stdin: 'y\n' });
    expect(r.stderr).not.toContain('error');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/▸ get_order \{"order_id":"O-1001"\}/);
    expect(r.stdout).toMatch(/✓ get_order \d+ ms/);
    expect(r.stdout).toMatch(/\? approve create_ticket .*\[y\/n\] y/);
    expect(r.stdout).toContain('✓ approved by user_a1');
    expect(r.stdout).toMatch(/✓ create_ticket \d+ ms/);
    expect(r.stdout).toMatch(/ticket T-[0-9A-Z]+/);
    expect(r.stdout).toMatch(/— completed · 3 model calls · 2 tool calls/);
    const runId = /run (run_[0-9A-Z]+)/.exec(r.stderr)![1];
    const approvals = await t.call(KEYS.memberA1, 'GET', `/v1/runs/${runId}/approvals`);
    expect(approvals.body.data).toEqual([expect.objectContaining({ tool_name: 'create_ticket', status: 'approved', decided_by: 'user_a1' })]);
    const show = await runCli(['runs', 'show', runId], { url: t.url, key: KEYS.memberA1 });
    expect(show.code).toBe(0);
    expect(show.stdout).toContain('completed');
    expect(show.stdout).toMatch(/T-[0-9A-Z]+/);
  });

  it('chat --steer: a line read while the run goes on steers it; the run answers it', async () => {
    const session = await newSession();
    const first = `!script ${JSON.stringify([{ sleep_ms: 600 }, { text: 'not this' }])}`;
    const steered = `!script ${JSON.stringify([{ text: 'steered via the cli' }])}`;
    const r = await runCli(['chat', session, first, '--steer'], { url: t.url, stdin: `${steered}\n` });
    expect(r.stderr).not.toContain('error');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/↳ steered into run_[0-9A-Z]+/);
    expect(r.stdout).toMatch(/↳ your message msg_[0-9A-Z]+ joins the next turn/);
    expect(r.stdout).toContain('steered via the cli');
    expect(r.stdout).not.toContain('not this');
  });

  it('chat: "n" rejects the approval; the tool never runs and the exit status follows the run', async () => {
    const session = await newSession();
    const r = await runCli(['chat', session, 'Please help with order O-1001'], { url: t.url, stdin: 'n\n' });
    expect(r.stdout).toContain('✗ rejected by admin_a');
    expect(r.stdout).not.toMatch(/✓ create_ticket/);
    const runId = /run (run_[0-9A-Z]+)/.exec(r.stderr)![1];
    const run = await t.call(KEYS.adminA, 'GET', `/v1/runs/${runId}`);
    expect(r.code).toBe(run.body.status === 'completed' ? 0 : 1);
    expect(r.stdout).toContain(`— ${run.body.status}`);
  });

  it('chat survives the server side dropping the SSE connection mid-run (resumes with Last-Event-ID, nothing lost or repeated)', async () => {
    const proxy = await startCuttingProxy(t.url, 2);
    try {
      const session = await newSession();
      const text = Array.from({ length: 40 }, (_, i) => `w${i}`).join(' ') + ' END';
      const script = `!script ${JSON.stringify([{ text, chunk_size: 3, delay_ms: 15 }])}`;
      const r = await runCli(['chat', session, script], { url: proxy.url });
      expect(r.code).toBe(0);
      expect(proxy.cuts).toBe(1);
      expect(proxy.eventRequests.length).toBeGreaterThanOrEqual(2);
      expect(proxy.eventRequests[0]['last-event-id']).toBeUndefined();
      expect(Number(proxy.eventRequests[1]['last-event-id'])).toBeGreaterThan(0);
      expect(r.stderr).toMatch(/connection lost: .*resuming after event \d+/);
      // Every delta exactly once: the typed answer is the scripted text, whole.
      const answer = r.stdout.split('\n').filter((l) => !l.startsWith('—')).join('\n').trim();
      expect(answer).toBe(text);
      expect(r.stdout).toContain('— completed');
    } finally {
      await proxy.close();
    }
  });

  it('runs cancel, runs list and errors with their contract codes', async () => {
    const session = await newSession();
    const created = await t.call(KEYS.adminA, 'POST', `/v1/sessions/${session}/runs`, { input: { role: 'user', content: [{ type: 'text', text: '!script [{"sleep_ms":20000}]' }] } }, { 'idempotency-key': `cli-cancel-${session}` });
    expect(created.status).toBe(202);
    const cancel = await runCli(['runs', 'cancel', created.body.run_id], { url: t.url });
    expect(cancel.code).toBe(0);
    expect(cancel.stdout).toMatch(new RegExp(`${created.body.run_id} (cancelling|cancelled)`));
    const list = await runCli(['runs', 'list', session], { url: t.url });
    expect(list.stdout).toContain(created.body.run_id);
    // The input's receipt (CONTRACT 7): where it went and which run took it.
    const input = await runCli(['inputs', 'show', created.body.receipt.id], { url: t.url });
    expect(input.code).toBe(0);
    expect(input.stdout).toContain(`${created.body.receipt.id}  started -> ${created.body.run_id}`);
    const inputJson = JSON.parse((await runCli(['inputs', 'show', created.body.receipt.id, '--json'], { url: t.url })).stdout);
    expect(inputJson).toMatchObject({ id: created.body.receipt.id, object: 'input', disposition: 'started', run_id: created.body.run_id });
    const missing = await runCli(['runs', 'show', 'run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B'], { url: t.url });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/error: run_not_found: .*\[request req_/);
    const badKey = await runCli(['sessions', 'list'], { url: t.url, key: 'not-a-known-key-000' });
    expect(badKey.code).toBe(1);
    expect(badKey.stderr).toContain('unauthorized');
    const down = await runCli(['sessions', 'list'], { url: 'http://127.0.0.1:9' });
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('cannot reach http://127.0.0.1:9');
  });

  it('agents create|versions|show|list: API agents and their versions (admin), with their tools', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-cli-'));
    const v1 = {
      id: 'cli_agent',
      description: 'Made by the CLI test',
      tools: ['get_time', { type: 'function', name: 'confirm_with_user', description: 'Asks the user.', parameters: { type: 'object', properties: { q: { type: 'string' } } } }],
    };
    writeFileSync(join(dir, 'v1.json'), JSON.stringify(v1));
    const created = await runCli(['agents', 'create', '--file', join(dir, 'v1.json')], { url: t.url });
    expect(created.stderr).toContain('created cli_agent v1');
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/cli_agent\s+v1 · api · model scripted/);
    expect(created.stdout).toMatch(/confirm_with_user\s+function\s+auto\s+public\s+false\s+client/);
    // The next version from stdin ('-'), with the agent id as argument.
    const next = await runCli(['agents', 'create', 'cli_agent', '--file', '-', '--json'], { url: t.url, stdin: JSON.stringify({ tools: ['get_time'] }) });
    expect(next.code).toBe(0);
    expect(JSON.parse(next.stdout)).toMatchObject({ id: 'cli_agent', version: '2', source: 'api' });
    const versions = await runCli(['agents', 'versions', 'cli_agent'], { url: t.url });
    expect(versions.code).toBe(0);
    expect(versions.stdout).toMatch(/^1\s+\S+\s+get_time, confirm_with_user$/m);
    expect(versions.stdout).toMatch(/^2\s+\S+\s+get_time$/m);
    const shown = await runCli(['agents', 'show', 'cli_agent', '--version', '1', '--json'], { url: t.url, key: KEYS.memberA1 });
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout).tools.map((x: { name: string }) => x.name)).toEqual(['get_time', 'confirm_with_user']);
    const list = await runCli(['agents', 'list'], { url: t.url });
    expect(list.stdout).toMatch(/cli_agent\s+2\s+api\s+scripted\s+1/);
    expect(list.stdout).toMatch(/support_agent\s+\d+\s+file/);
    const member = await runCli(['agents', 'create', '--file', join(dir, 'v1.json')], { url: t.url, key: KEYS.memberA1 });
    expect(member.code).toBe(1);
    expect(member.stderr).toContain('forbidden');
    const other = await runCli(['agents', 'show', 'cli_agent'], { url: t.url, key: KEYS.adminB });
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('agent_not_found');
  });

  it('audit: lists filtered records and verifies the chain (admin); members get forbidden', async () => {
    const session = await newSession();
    const chat = await runCli(['chat', session, 'hello there'], { url: t.url });
    expect(chat.code).toBe(0);
    const runId = /run (run_[0-9A-Z]+)/.exec(chat.stderr)![1];
    const audit = await runCli(['audit', '--run', runId, '--limit', '100'], { url: t.url });
    expect(audit.code).toBe(0);
    expect(audit.stdout).toContain('run_event.run.started');
    expect(audit.stdout).toContain('run_event.run.finished');
    const byAction = await runCli(['audit', '--action', 'POST /v1/sessions', '--json'], { url: t.url });
    const records = JSON.parse(byAction.stdout).data as Array<{ action: string }>;
    expect(records.length).toBeGreaterThan(0);
    expect(records.every((x) => x.action === 'POST /v1/sessions')).toBe(true);
    const verify = await runCli(['audit', 'check-chain'], { url: t.url });
    expect(verify.code).toBe(0);
    expect(verify.stdout).toMatch(/✓ chain verified: \d+ records intact/);
    expect(verify.stderr).toBe('');
    // The old spelling still checks the chain, with one deprecation line.
    const old = await runCli(['audit', '--verify'], { url: t.url });
    expect(old.code).toBe(0);
    expect(old.stdout).toMatch(/✓ chain verified: \d+ records intact/);
    expect(old.stderr.trim().split('\n')).toEqual([expect.stringContaining('audit --verify is deprecated: use `agent-api audit check-chain`')]);
    const member = await runCli(['audit'], { url: t.url, key: KEYS.memberA1 });
    expect(member.code).toBe(1);
    expect(member.stderr).toContain('forbidden');
  });
  it('webhooks: create prints the secret once, list shows the endpoint, deliveries show a delivered run.completed; members get forbidden', async () => {
    const receiver = await new WebhookReceiver().start();
    try {
      const created = await runCli(['webhooks', 'create', receiver.url, '--events', 'run.completed,run.failed', '--description', 'cli'], { url: t.url });
      expect(created.code).toBe(0);
      const [id, secretLine] = created.stdout.trim().split('\n');
      expect(id).toMatch(/^wh_[0-9A-Z]{26}$/);
      expect(secretLine).toMatch(/^secret whsec_[A-Za-z0-9+/]{43}=$/);
      receiver.secret = secretLine.slice('secret '.length);
      const list = await runCli(['webhooks', 'list'], { url: t.url });
      expect(list.code).toBe(0);
      expect(list.stdout).toMatch(new RegExp(`${id}\\s+${receiver.url.replace(/[.]/g, '\\.')}\\s+run\\.completed,run\\.failed\\s+yes`));
      expect(list.stdout).not.toContain('whsec_');

      const session = await newSession();
      const chat = await runCli(['chat', session, 'notify the hook'], { url: t.url });
      expect(chat.code).toBe(0);
      const runId = /run (run_[0-9A-Z]+)/.exec(chat.stderr)![1];
      await receiver.waitFor('run.completed', runId);
      let deliveries = '';
      for (let i = 0; i < 100; i++) {
        deliveries = (await runCli(['webhooks', 'deliveries', id], { url: t.url })).stdout;
        if (/run\.completed\s+\S+\s+delivered/.test(deliveries)) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(deliveries).toMatch(new RegExp(`whevt_\\w+\\s+run\\.completed\\s+${runId}\\s+delivered\\s+1\\s+HTTP 200`));
      expect(receiver.invalid).toEqual([]);

      const outside = await runCli(['webhooks', 'create', 'https://hooks.example.com/x'], { url: t.url });
      expect(outside.code).toBe(1);
      expect(outside.stderr).toContain('invalid_request');
      const member = await runCli(['webhooks', 'list'], { url: t.url, key: KEYS.memberA1 });
      expect(member.code).toBe(1);
      expect(member.stderr).toContain('forbidden');
    } finally {
      await receiver.stop();
    }
  });

  it('secrets: set reads the value from stdin (or --value) and never prints it, set again rotates, list shows versions, delete; members get forbidden', async () => {
    const value = 'cli-secret-value-5d1f0a9e';
    const set = await runCli(['secrets', 'set', 'CLI_TOKEN'], { url: t.url, stdin: `${value}\n` });
    expect(set.code).toBe(0);
    expect(set.stdout).toBe('CLI_TOKEN version 1\n');
    expect(set.stderr).toContain('${secret:CLI_TOKEN}');
    const rotated = await runCli(['secrets', 'set', 'CLI_TOKEN', '--value', `${value}-2`], { url: t.url });
    expect(rotated.code).toBe(0);
    expect(rotated.stdout).toBe('CLI_TOKEN version 2\n');
    for (const r of [set, rotated]) expect(r.stdout + r.stderr).not.toContain(value);
    // The trailing newline of `echo value |` is not part of the value.
    expect((await runCli(['secrets', 'set', 'CLI_OTHER'], { url: t.url, stdin: 'other\r\n' })).code).toBe(0);
    const { ResolveSecretsQuery } = await import('../../src/modules/secrets/application/queries/resolve-secrets/resolve-secrets.query');
    const { QueryBus } = await import('@nestjs/cqrs');
    const resolved: Map<string, string> = await t.app.get(QueryBus).execute(new ResolveSecretsQuery('tenant_a', ['CLI_TOKEN', 'CLI_OTHER']));
    expect(resolved).toEqual(new Map([['CLI_TOKEN', `${value}-2`], ['CLI_OTHER', 'other']]));

    const list = await runCli(['secrets', 'list'], { url: t.url });
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/NAME\s+VERSION\s+UPDATED\s+CREATED/);
    expect(list.stdout).toMatch(/CLI_OTHER\s+1\s+\S+Z/);
    expect(list.stdout).toMatch(/CLI_TOKEN\s+2\s+\S+Z/);
    expect(list.stdout).not.toContain(value);
    const asJson = JSON.parse((await runCli(['secrets', 'list', '--json', '--limit', '1'], { url: t.url })).stdout);
    expect(asJson).toMatchObject({ object: 'list', has_more: true, data: [{ name: 'CLI_OTHER', version: 1 }] });

    const empty = await runCli(['secrets', 'set', 'CLI_EMPTY'], { url: t.url, stdin: '' });
    expect(empty.code).toBe(2);
    const badName = await runCli(['secrets', 'set', 'lower'], { url: t.url, stdin: 'v' });
    expect(badName.code).toBe(1);
    expect(badName.stderr).toContain('invalid_request');
    const member = await runCli(['secrets', 'set', 'CLI_TOKEN'], { url: t.url, key: KEYS.memberA1, stdin: 'member' });
    expect(member.code).toBe(1);
    expect(member.stderr).toContain('forbidden');

    const del = await runCli(['secrets', 'delete', 'CLI_TOKEN'], { url: t.url });
    expect(del.code).toBe(0);
    expect(del.stdout).toBe('deleted CLI_TOKEN\n');
    const again = await runCli(['secrets', 'delete', 'CLI_TOKEN'], { url: t.url });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('secret_not_found');
    expect((await runCli(['secrets', 'list'], { url: t.url })).stdout).not.toContain('CLI_TOKEN');
  });
  it('automations: create (cron with a time zone, one-time), list with next run and last invocation, pause, resume, run now; bad cron is a usage-level 400', async () => {
    const created = await runCli(['automations', 'create', 'cli digest', '--cron', '0 9 * * 1-5', '--tz', 'Europe/Berlin', '--agent', 'assistant', '--input', 'digest please'], { url: t.url, key: KEYS.memberA1 });
    expect(created.code).toBe(0);
    const id = created.stdout.match(/auto_[0-9A-Z]+/)![0];
    expect(created.stdout).toContain('active  cron 0 9 * * 1-5 (Europe/Berlin)');
    const paused = await runCli(['automations', 'pause', id], { url: t.url, key: KEYS.memberA1 });
    expect(paused.stdout).toContain(`${id}  paused`);
    expect((await runCli(['automations', 'resume', id], { url: t.url, key: KEYS.memberA1 })).stdout).toContain(`${id}  active`);
    const ran = await runCli(['automations', 'run', id], { url: t.url, key: KEYS.memberA1 });
    expect(ran.code).toBe(0);
    expect(ran.stdout).toMatch(/^ainv_[0-9A-Z]+ {2}queued/);
    let list = '';
    for (const until = Date.now() + 20000; Date.now() < until; await new Promise((r) => setTimeout(r, 100))) {
      list = (await runCli(['automations', 'list'], { url: t.url, key: KEYS.memberA1 })).stdout;
      if (/started run_/.test(list)) break;
    }
    expect(list).toContain('cli digest');
    expect(list).toMatch(/started run_[0-9A-Z]+/);
    const once = await runCli(['automations', 'create', 'cli once', '--at', '2099-01-01T00:00:00.000Z', '--agent', 'assistant', '--input', 'later'], { url: t.url, key: KEYS.memberA1 });
    expect(once.stdout).toContain('once 2099-01-01T00:00:00.000Z');
    const bad = await runCli(['automations', 'create', 'x', '--cron', 'every day', '--agent', 'assistant', '--input', 'x'], { url: t.url, key: KEYS.memberA1 });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('invalid_request');
    // Another member sees none of them.
    expect((await runCli(['automations', 'list'], { url: t.url, key: KEYS.memberA2 })).stdout).not.toContain(id);
  });
});
