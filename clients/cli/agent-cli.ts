#!/usr/bin/env node
/**
 * agent-api: the Agent API from a terminal (built on the typed client in clients/ts).
 * `npm run cli -- <command>` or, once built and linked, `agent-api <command>`.
 */
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { AgentApiClient, ApiError, isTerminal, type Agent, type AuditRecord, type CreateAgentRequest, type CreateWebhookRequest, type Message, type Run, type Session, type WebhookDelivery, type WebhookEndpoint } from '../ts/src/client';
import { streamRunEvents, type AgentEvent } from '../ts/src/sse';

const HELP = `agent-api - use the Agent API from the command line

Usage:
  agent-api sessions list [--limit n]             your sessions, newest first
  agent-api sessions create [--agent id] [--title t]
  agent-api sessions show <session>               a session and its message history
  agent-api chat <session> "text" [--yes] [--enqueue] [--steer]
                                                  start a run and stream it: the answer as it is
                                                  typed, tool calls, approvals asked inline (y/n)
  agent-api runs list <session>
  agent-api runs show <run>
  agent-api runs cancel <run>
  agent-api agents [list]                         file and API agents (source file|api)
  agent-api agents show <agent> [--version n]     one agent (version) and its tools
  agent-api agents versions <agent>               every version of an agent
  agent-api agents create --file agent.json       a new API agent, version 1 (admin; '-' reads stdin)
  agent-api agents create <agent> --file v.json   the next version of an API agent (admin)
  agent-api audit [--run id] [--session id] [--action a] [--actor subject] [--limit n] [--after id]
  agent-api audit --verify                        check the audit hash chain (admin)
  agent-api webhooks list                         the tenant's webhook endpoints (admin)
  agent-api webhooks create <url> [--events a,b] [--description d]
                                                  a new endpoint (default events: every run.*
                                                  type); prints its signing secret, shown only once
  agent-api webhooks deliveries <endpoint> [--limit n] [--after id]
                                                  an endpoint's recent deliveries, newest first

Options:
  --url <url>      service URL   (env AGENT_API_URL, default http://127.0.0.1:3000)
  --key <key>      API key       (env AGENT_API_KEY, default dev-key-0001)
  --json           print raw JSON instead of text
  --yes            chat: approve every approval request without asking
  --enqueue        chat: queue behind an active run instead of failing with session_busy
  --steer          chat: lines read from piped stdin steer the run too (at a terminal, typing
                   while the run streams always steers it; a waiting approval prompt takes its answer)
  -h, --help       this help

Chat: Ctrl-C once cancels the run, twice quits. A dropped connection is resumed from the last
event seen (Last-Event-ID), so nothing is lost or shown twice.
Exit status: 0 ok (chat: run completed), 1 error or run not completed, 2 usage error.

Examples:
  npm run cli -- sessions create --title "Order help"
  npm run cli -- chat sess_01J... "Please help with order O-1001"
  AGENT_API_KEY=dev-key-0001 npm run cli -- audit --run run_01J...
`;

class UsageError extends Error {}

interface Io {
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
  input: NodeJS.ReadableStream;
  env: NodeJS.ProcessEnv;
}

const useColor = (io: Io) => (io.out as { isTTY?: boolean }).isTTY === true && !io.env.NO_COLOR;
function palette(on: boolean) {
  const wrap = (code: string) => (s: string) => (on ? `\x1b[${code}m${s}\x1b[0m` : s);
  return { dim: wrap('2'), bold: wrap('1'), red: wrap('31'), green: wrap('32'), yellow: wrap('33'), cyan: wrap('36') };
}

const compact = (v: unknown, max = 120): string => {
  const s = JSON.stringify(v) ?? '';
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
};

function textOf(m: Pick<Message, 'content'>): string {
  return m.content
    .map((p) => {
      const part = p as Record<string, unknown>;
      if (part.type === 'text') return String(part.text ?? '');
      if (part.type === 'tool_call') return `[tool call ${String(part.tool_name)} ${compact(part.arguments, 80)}]`;
      if (part.type === 'tool_result') return `[tool result ${part.ok === false ? 'error ' + compact(part.error, 80) : compact(part.result, 80)}]`;
      if (part.type === 'attachment_ref') return `[attachment ${String(part.attachment_id)}]`;
      return `[${String(part.type)}]`;
    })
    .join(' ');
}

function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ')).join('\n') + '\n';
}

/** Lines from stdin, on demand (works for a TTY and for piped input alike). */
class LineReader {
  private readonly lines: string[] = [];
  private readonly waiters: Array<(line: string | null) => void> = [];
  private closed = false;
  private rl: ReturnType<typeof createInterface> | null = null;
  constructor(private readonly input: NodeJS.ReadableStream) {}
  next(): Promise<string | null> {
    if (!this.rl) {
      this.rl = createInterface({ input: this.input, terminal: false });
      this.rl.on('line', (l) => (this.waiters.length ? this.waiters.shift()!(l) : this.lines.push(l)));
      this.rl.on('close', () => {
        this.closed = true;
        while (this.waiters.length) this.waiters.shift()!(null);
      });
    }
    if (this.lines.length) return Promise.resolve(this.lines.shift()!);
    if (this.closed) return Promise.resolve(null);
    return new Promise((resolve) => this.waiters.push(resolve));
  }
  close(): void {
    this.rl?.close();
  }
}

export async function main(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      url: { type: 'string' },
      key: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
      agent: { type: 'string' },
      title: { type: 'string' },
      limit: { type: 'string' },
      run: { type: 'string' },
      session: { type: 'string' },
      action: { type: 'string' },
      actor: { type: 'string' },
      after: { type: 'string' },
      verify: { type: 'boolean', default: false },
      yes: { type: 'boolean', short: 'y', default: false },
      enqueue: { type: 'boolean', default: false },
      steer: { type: 'boolean', default: false },
      file: { type: 'string' },
      version: { type: 'string' },
      events: { type: 'string' },
      description: { type: 'string' },
    },
  });
  const [command, sub, ...rest] = positionals;
  if (values.help || !command || command === 'help') {
    io.out.write(HELP);
    return command || values.help ? 0 : 2;
  }
  const baseUrl = values.url ?? io.env.AGENT_API_URL ?? 'http://127.0.0.1:3000';
  const apiKey = values.key ?? io.env.AGENT_API_KEY ?? 'dev-key-0001';
  const client = new AgentApiClient({ baseUrl, apiKey });
  const c = palette(useColor(io));
  const print = (s: string) => io.out.write(s);
  const json = (v: unknown) => print(`${JSON.stringify(v, null, 2)}\n`);
  const limit = values.limit === undefined ? undefined : Number(values.limit);
  if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= 100)) throw new UsageError('--limit must be a whole number from 1 to 100');
  const need = (v: string | undefined, what: string): string => {
    if (!v) throw new UsageError(`missing ${what}`);
    return v;
  };

  switch (command) {
    case 'sessions': {
      if (sub === 'list' || sub === undefined) {
        const page = await client.listSessions({ limit });
        if (values.json) return json(page), 0;
        if (!page.data.length) return print('no sessions yet: agent-api sessions create --title "..."\n'), 0;
        print(table([['ID', 'TITLE', 'AGENT', 'STATUS', 'LAST ACTIVE'], ...page.data.map((s: Session) => [s.id, s.title ?? '-', s.agent_id, s.status, s.last_active_at])]));
        return 0;
      }
      if (sub === 'create') {
        const s = await client.createSession({ ...(values.agent ? { agent_id: values.agent } : {}), ...(values.title ? { title: values.title } : {}) });
        if (values.json) return json(s), 0;
        print(`${s.id}\n`);
        io.err.write(c.dim(`created session ${s.id} (agent ${s.agent_id}${s.title ? `, "${s.title}"` : ''}); chat with: agent-api chat ${s.id} "hello"\n`));
        return 0;
      }
      if (sub === 'show') {
        const id = need(rest[0], 'session id: agent-api sessions show <session>');
        const [s, messages] = await Promise.all([client.getSession(id), client.listMessages(id, { limit: 100 })]);
        if (values.json) return json({ session: s, messages: messages.data }), 0;
        print(`${c.bold(s.title ?? s.id)}  ${c.dim(`${s.id} · ${s.agent_id} · ${s.status} · revision ${s.revision}`)}\n`);
        for (const m of messages.data) print(`${c.cyan(m.role.padEnd(9))} ${textOf(m)}\n`);
        if (messages.has_more) print(c.dim('(older history continues: see the API for more pages)\n'));
        return 0;
      }
      throw new UsageError(`unknown: sessions ${sub}`);
    }
    case 'chat': {
      const sessionId = need(sub, 'session id: agent-api chat <session> "text"');
      const text = need(rest.join(' ').trim() || undefined, 'message text: agent-api chat <session> "text"');
      // Typing while a run streams steers it: at a terminal, or with --steer for piped input too.
      const steer = values.steer || (io.input as { isTTY?: boolean }).isTTY === true;
      return chat(client, io, c, sessionId, text, { autoApprove: values.yes, enqueue: values.enqueue, json: values.json, steer });
    }
    case 'runs': {
      if (sub === 'list') {
        const page = await client.listRuns(need(rest[0], 'session id: agent-api runs list <session>'), { limit });
        if (values.json) return json(page), 0;
        print(table([['ID', 'STATUS', 'STEPS', 'CREATED'], ...page.data.map((r: Run) => [r.id, r.status, String(r.step_count), r.created_at])]));
        return 0;
      }
      const id = need(rest[0], `run id: agent-api runs ${sub ?? 'show'} <run>`);
      if (sub === 'show') {
        const run = await client.getRun(id);
        if (values.json) return json(run), 0;
        print(describeRun(run, c));
        if (run.final_message_id) {
          const m = await client.getMessage(run.session_id, run.final_message_id);
          print(`\n${textOf(m)}\n`);
        }
        return 0;
      }
      if (sub === 'cancel') {
        const run = await client.cancelRun(id);
        if (values.json) return json(run), 0;
        print(`${run.id} ${run.status}\n`);
        return 0;
      }
      throw new UsageError(`unknown: runs ${sub}`);
    }
    case 'agents': {
      const printAgent = (a: Agent) => {
        print(`${c.bold(a.id)}  ${c.dim(`v${a.version} · ${a.source} · model ${a.model}`)}\n`);
        if (a.description) print(`${a.description}\n`);
        print(table([['TOOL', 'TYPE', 'RISK', 'VISIBILITY', 'IDEMPOTENT', 'EXECUTOR'], ...a.tools.map((t) => [t.name, t.type, t.risk, t.visibility, String(t.idempotent), t.executor])]));
      };
      if (sub === 'list' || sub === undefined) {
        const page = await client.listAgents();
        if (values.json) return json(page), 0;
        print(table([['ID', 'VERSION', 'SOURCE', 'MODEL', 'TOOLS'], ...page.data.map((a: Agent) => [a.id, a.version, a.source, a.model, String(a.tools.length)])]));
        return 0;
      }
      if (sub === 'show') {
        const id = need(rest[0], 'agent id: agent-api agents show <agent> [--version N]');
        const a = values.version ? await client.getAgentVersion(id, values.version) : await client.getAgent(id);
        if (values.json) return json(a), 0;
        printAgent(a);
        return 0;
      }
      if (sub === 'versions') {
        const id = need(rest[0], 'agent id: agent-api agents versions <agent>');
        const page = await client.listAgentVersions(id);
        if (values.json) return json(page), 0;
        print(table([['VERSION', 'CREATED', 'TOOLS'], ...page.data.map((a: Agent) => [a.version, a.created_at ?? '-', a.tools.map((t) => t.name).join(', ')])]));
        return 0;
      }
      if (sub === 'create') {
        // agents create --file agent.json (a new agent), or agents create <agent> --file v2.json (its next version)
        const file = need(values.file, 'definition: agent-api agents create [<agent>] --file agent.json');
        const body = JSON.parse(readFileSync(file === '-' ? 0 : file, 'utf8')) as CreateAgentRequest;
        const a = rest[0] ? await client.createAgentVersion(rest[0], { ...body, id: undefined }) : await client.createAgent(body);
        if (values.json) return json(a), 0;
        printAgent(a);
        io.err.write(c.dim(`created ${a.id} v${a.version}; start a session with: agent-api sessions create --agent ${a.id}\n`));
        return 0;
      }
      throw new UsageError(`unknown: agents ${sub}`);
    }
    case 'audit': {
      if (values.verify) {
        const v = await client.verifyAudit();
        if (values.json) return json(v), v.ok ? 0 : 1;
        if (v.ok) print(`${c.green('✓ chain verified')}: ${v.checked} records intact\n`);
        else print(`${c.red('✗ chain broken')} after ${v.checked} records: ${compact(v.first_broken, 400)}\n`);
        return v.ok ? 0 : 1;
      }
      const page = await client.listAudit({ run_id: values.run, session_id: values.session, action: values.action, actor: values.actor, after: values.after, limit });
      if (values.json) return json(page), 0;
      if (!page.data.length) return print('no audit records match\n'), 0;
      print(
        table([
          ['SEQ', 'TIME', 'ACTOR', 'ACTION', 'RESOURCE', 'OUTCOME'],
          ...page.data.map((r: AuditRecord) => [String(r.seq), r.occurred_at, `${r.actor_subject_id ?? '-'}${r.actor_role ? ` (${r.actor_role})` : ''}`, r.action, r.resource_id ?? r.run_id ?? '-', r.outcome ?? '-']),
        ]),
      );
      if (page.has_more) print(c.dim(`next page: add --after ${page.last_id}\n`));
      return 0;
    }
    case 'webhooks': {
      if (sub === 'list' || sub === undefined) {
        const page = await client.listWebhooks({ limit });
        if (values.json) return json(page), 0;
        if (!page.data.length) return print('no webhook endpoints yet: agent-api webhooks create <url>\n'), 0;
        print(table([['ID', 'URL', 'EVENTS', 'ENABLED', 'CREATED'], ...page.data.map((w: WebhookEndpoint) => [w.id, w.url, w.events.join(','), w.enabled ? 'yes' : 'no', w.created_at])]));
        return 0;
      }
      if (sub === 'create') {
        const url = need(rest[0], 'url: agent-api webhooks create <url> [--events a,b]');
        const events = (values.events ?? 'run.completed,run.failed,run.cancelled,run.expired,run.terminated,run.requires_action')
          .split(',')
          .map((e) => e.trim())
          .filter(Boolean) as CreateWebhookRequest['events'];
        if (!events.length) throw new UsageError('--events needs at least one event type');
        const w = await client.createWebhook({ url, events, ...(values.description ? { description: values.description } : {}) });
        if (values.json) return json(w), 0;
        print(`${w.id}\n`);
        if (w.secret === null) {
          // A replay of this request (same Idempotency-Key) after the secret was rotated or the endpoint deleted.
          io.err.write(`webhook ${w.id}: its secret is no longer the one first shown (rotated or deleted since); rotate it to get a new one\n`);
          return 1;
        }
        print(`secret ${w.secret}\n`);
        io.err.write(c.dim(`created webhook ${w.id} for ${w.events.join(', ')}; keep the secret: it is shown only now (verify deliveries with standardwebhooks)\n`));
        return 0;
      }
      if (sub === 'deliveries') {
        const id = need(rest[0], 'endpoint id: agent-api webhooks deliveries <endpoint>');
        const page = await client.listWebhookDeliveries(id, { limit, after: values.after });
        if (values.json) return json(page), 0;
        if (!page.data.length) return print('no deliveries yet\n'), 0;
        print(
          table([
            ['ID', 'TYPE', 'OBJECT', 'STATUS', 'ATTEMPTS', 'LAST', 'NEXT ATTEMPT'],
            ...page.data.map((d: WebhookDelivery) => [
              d.id,
              d.type,
              d.object_id,
              d.status,
              String(d.attempts),
              d.last_response_status !== null ? `HTTP ${d.last_response_status}` : (d.last_error ?? '-'),
              d.next_attempt_at ?? '-',
            ]),
          ]),
        );
        if (page.has_more) print(c.dim(`next page: add --after ${page.last_id}\n`));
        return 0;
      }
      throw new UsageError(`unknown: webhooks ${sub}`);
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

function describeRun(run: Run, c: ReturnType<typeof palette>): string {
  const status = run.status === 'completed' ? c.green(run.status) : isTerminal(run.status) ? c.red(run.status) : c.yellow(run.status);
  const lines = [
    `${c.bold(run.id)}  ${status}${run.termination_reason ? ` (${run.termination_reason})` : ''}`,
    `session   ${run.session_id}`,
    `agent     ${run.agent.id} v${run.agent.version}`,
    `steps     ${run.step_count}   tool calls ${run.usage.tool_calls}   model calls ${run.usage.model_calls}   tokens ${run.usage.input_tokens} in / ${run.usage.output_tokens} out`,
    `created   ${run.created_at}${run.finished_at ? `   finished ${run.finished_at}` : ''}`,
  ];
  if (run.error) lines.push(`error     ${c.red(run.error.code)}: ${run.error.message}`);
  for (const a of run.pending_approvals) lines.push(`approval  ${c.yellow('pending')} ${a.approval_id} ${a.tool_name}`);
  return lines.join('\n') + '\n';
}

async function chat(client: AgentApiClient, io: Io, c: ReturnType<typeof palette>, sessionId: string, text: string, opts: { autoApprove: boolean; enqueue: boolean; json: boolean; steer: boolean }): Promise<number> {
  const started = Date.now();
  const receipt = await client.sendText(sessionId, text, opts.enqueue ? { concurrency: 'enqueue' } : {});
  const runId = receipt.run_id;
  const lines = new LineReader(io.input);
  let midLine = false;
  const write = (s: string) => {
    if (!s) return;
    io.out.write(s);
    midLine = !s.endsWith('\n');
  };
  const line = (s: string) => write(`${midLine ? '\n' : ''}${s}\n`);
  if (!opts.json) io.err.write(c.dim(`run ${runId} (${receipt.status})\n`));

  const abort = new AbortController();
  let interrupts = 0;
  const onSigint = () => {
    interrupts++;
    if (interrupts === 1) {
      line(c.yellow('cancelling the run… (Ctrl-C again to quit)'));
      client.cancelRun(runId).catch((e: unknown) => line(c.red(`cancel failed: ${e instanceof Error ? e.message : String(e)}`)));
    } else abort.abort();
  };
  process.on('SIGINT', onSigint);
  // With steering on, every line typed goes to the run (concurrency steer: it takes it into its
  // next model turn), except the answer to an approval prompt that is waiting for one.
  let answerWaiter: ((line: string | null) => void) | null = null;
  let inputClosed = false;
  const nextAnswer = (): Promise<string | null> => {
    if (!opts.steer) return lines.next();
    return inputClosed ? Promise.resolve(null) : new Promise((resolve) => (answerWaiter = resolve));
  };
  const pump = async () => {
    for (;;) {
      const typed = await lines.next();
      const waiter = answerWaiter;
      answerWaiter = null;
      if (waiter) waiter(typed);
      if (typed === null) {
        inputClosed = true;
        return;
      }
      if (waiter || typed.trim() === '') continue;
      try {
        const r = await client.sendText(sessionId, typed, { concurrency: 'steer' });
        if (opts.json) continue;
        line(r.steered ? c.dim(`↳ steered into ${r.run_id}`) : c.dim(`↳ the run had ended: a new run ${r.run_id} takes it (agent-api runs show ${r.run_id})`));
      } catch (e) {
        line(c.red(`steer failed: ${e instanceof Error ? e.message : String(e)}`));
      }
    }
  };
  const pumping = opts.steer ? pump() : null;
  let finished: AgentEvent | null = null;
  try {
    for await (const ev of streamRunEvents(client, runId, {
      signal: abort.signal,
      onReconnect: (r) => io.err.write(c.dim(`\n(connection lost: ${r.reason}; resuming after event ${r.lastEventId ?? 0} in ${r.delayMs} ms)\n`)),
    })) {
      if (opts.json) {
        io.out.write(`${JSON.stringify(ev)}\n`);
        if (ev.type === 'approval.requested') await decide(ev);
        if (ev.type === 'run.finished') finished = ev;
        continue;
      }
      switch (ev.type) {
        case 'message.delta':
          write(ev.data.delta);
          break;
        case 'message.completed':
          if (midLine) write('\n');
          break;
        case 'tool.requested':
          line(`${c.cyan('▸')} ${c.bold(ev.data.tool_name)} ${c.dim(compact(ev.data.arguments))}${ev.data.risk === 'approve' ? c.yellow(' needs approval') : ''}`);
          break;
        case 'tool.started':
          if (ev.data.attempt > 1) line(c.dim(`  ${ev.data.tool_name}: attempt ${ev.data.attempt}`));
          break;
        case 'tool.completed':
          line(`${c.green('✓')} ${ev.data.tool_name} ${c.dim(`${ev.data.duration_ms} ms → ${compact(ev.data.result, 100)}`)}`);
          break;
        case 'tool.failed':
          line(`${c.red('✗')} ${ev.data.tool_name} ${c.dim(`${ev.data.duration_ms} ms`)} ${c.red(ev.data.error.code)}: ${ev.data.error.message}`);
          break;
        case 'approval.requested':
          await decide(ev);
          break;
        case 'approval.accepted':
        case 'approval.rejected':
          line(`${ev.type === 'approval.accepted' ? c.green('✓ approved') : c.yellow('✗ rejected')} by ${ev.data.decided_by}${ev.data.reason ? `: ${ev.data.reason}` : ''}`);
          break;
        case 'run.input':
          line(c.dim(`↳ your message ${ev.data.message_id} joins the next turn`));
          break;
        case 'run.cancel_requested':
          line(c.yellow(`cancel requested by ${ev.data.requested_by}`));
          break;
        case 'run.finished':
          finished = ev;
          break;
        default:
          break;
      }
    }
  } finally {
    process.removeListener('SIGINT', onSigint);
    lines.close();
    await pumping;
  }
  if (!finished || finished.type !== 'run.finished') {
    if (!opts.json) line(c.yellow(`left the stream; the run goes on: agent-api runs show ${runId}`));
    return 1;
  }
  if (opts.json) return finished.data.status === 'completed' ? 0 : 1;
  const d = finished.data;
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  const count = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
  const summary = `${d.status}${d.termination_reason ? ` (${d.termination_reason})` : ''} · ${count(d.usage.model_calls, 'model call')} · ${count(d.usage.tool_calls, 'tool call')} · ${secs} s`;
  line(d.status === 'completed' ? c.green(`— ${summary}`) : c.red(`— ${summary}`));
  if (d.error) line(c.red(`${d.error.code}: ${d.error.message}`));
  return d.status === 'completed' ? 0 : 1;

  async function decide(ev: Extract<AgentEvent, { type: 'approval.requested' }>): Promise<void> {
    const what = `${ev.data.tool_name} ${compact(ev.data.arguments)}`;
    let approve = opts.autoApprove;
    if (opts.autoApprove) line(`${c.yellow('?')} approve ${what}? ${c.dim('yes (--yes)')}`);
    else {
      for (;;) {
        write(`${midLine ? '\n' : ''}${c.yellow('?')} approve ${c.bold(what)}? [y/n] `);
        const answer = await nextAnswer();
        if (answer === null) {
          line(c.dim('no answer (input closed): rejecting'));
          approve = false;
          break;
        }
        if ((io.input as { isTTY?: boolean }).isTTY === true) midLine = false;
        else write(`${answer}\n`); // piped input: show what was answered
        const a = answer.trim().toLowerCase();
        if (a === 'y' || a === 'yes') approve = true;
        else if (a === 'n' || a === 'no') approve = false;
        else continue;
        break;
      }
    }
    try {
      await client.decideApproval(runId, ev.data.approval_id, { decision: approve ? 'approve' : 'reject', ...(approve ? {} : { reason: 'rejected from the CLI' }) });
    } catch (e) {
      if (e instanceof ApiError && (e.code === 'approval_not_pending' || e.code === 'approval_already_decided')) line(c.dim(`approval already settled (${e.code})`));
      else throw e;
    }
  }
}

function report(err: unknown, io: Io, baseUrl: string): number {
  if (err instanceof UsageError || (err instanceof TypeError && 'code' in err && String((err as { code: unknown }).code).startsWith('ERR_PARSE_ARGS'))) {
    io.err.write(`error: ${err.message}\nrun "agent-api --help" for usage\n`);
    return 2;
  }
  if (err instanceof ApiError) {
    if (err.code === 'network_error') io.err.write(`error: cannot reach ${baseUrl} (${err.message}); is the service running? (npm start)\n`);
    else {
      const hint = err.code === 'session_busy' ? ` (active run ${String(err.details.active_run_id)}; use --enqueue to queue behind it)` : err.code === 'unauthorized' ? ' (set AGENT_API_KEY or --key)' : '';
      io.err.write(`error: ${err.code}: ${err.message}${hint}${err.requestId ? ` [request ${err.requestId}]` : ''}\n`);
    }
    return 1;
  }
  io.err.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
  return 1;
}

if (require.main === module) {
  const io: Io = { out: process.stdout, err: process.stderr, input: process.stdin, env: process.env };
  const argv = process.argv.slice(2);
  const urlIdx = argv.indexOf('--url');
  const baseUrl = (urlIdx >= 0 ? argv[urlIdx + 1] : undefined) ?? process.env.AGENT_API_URL ?? 'http://127.0.0.1:3000';
  main(argv, io)
    .catch((err: unknown) => report(err, io, baseUrl))
    .then((code) => {
      process.exitCode = code;
      // Let stdout drain; nothing else keeps the process alive once the work is done.
      setImmediate(() => process.exit(code));
    });
}
