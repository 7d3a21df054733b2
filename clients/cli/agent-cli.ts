#!/usr/bin/env node
/**
 * agent-api: the Agent API from a terminal (built on the typed client in clients/ts).
 * `npm run cli -- <command>` or, once built and linked, `agent-api <command>`.
 */
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { createReadStream, readFileSync } from 'node:fs';
import { AgentApiClient, ApiError, isTerminal, type Agent, type AuditRecord, type Automation, type CreateAgentRequest, type CreateWebhookRequest, type InputReceipt, type Message, type Run, type Secret, type Session, type WebhookDelivery, type WebhookEndpoint } from '../ts/src/client';
import { streamRunEvents, type AgentEvent } from '../ts/src/sse';
import { parsePublicKeys, verifyExport } from './audit-verify';

const HELP = `agent-api - use the Agent API from the command line

Usage:
  agent-api sessions list [--limit n]             your sessions, newest first
  agent-api sessions create [--agent id] [--title t]
  agent-api sessions show <session>               a session and its message history
  agent-api sessions subagents <session> [--limit n] [--after id]
                                                  the subagents (child sessions) its runs created
  agent-api chat <session> "text" [--yes] [--enqueue] [--steer]
                                                  start a run and stream it: the answer as it is
                                                  typed, tool calls, approvals asked inline (y/n)
  agent-api runs list <session>
  agent-api runs show <run>
  agent-api runs cancel <run>
  agent-api inputs show <input>                   an input's receipt: where it went, which run took it
  agent-api agents [list]                         file and API agents (source file|api)
  agent-api agents show <agent> [--version n]     one agent (version) and its tools
  agent-api agents versions <agent>               every version of an agent
  agent-api agents create --file agent.json       a new API agent, version 1 (admin; '-' reads stdin)
  agent-api agents create <agent> --file v.json   the next version of an API agent (admin)
  agent-api audit [--run id] [--session id] [--action a] [--actor subject] [--limit n] [--after id]
  agent-api audit check-chain                     check the server's audit hash chain (admin)
                                                  (was \`audit --verify\`: still accepted, deprecated)
  agent-api audit verify --file export.ndjson --public-key key.pem
                                                  check an export offline (no server): every hash,
                                                  link and checkpoint signature; names the first bad
                                                  record ('-' reads stdin; --public-key may repeat
                                                  and takes PEM or GET /v1/admin/audit/public-key JSON)
  agent-api webhooks list                         the tenant's webhook endpoints (admin)
  agent-api webhooks create <url> [--events a,b] [--description d]
                                                  a new endpoint (default events: every run.*
                                                  type); prints its signing secret, shown only once
  agent-api webhooks deliveries <endpoint> [--limit n] [--after id]
                                                  an endpoint's recent deliveries, newest first
  agent-api automations list [--limit n] [--after id]
                                                  your automations (admins: the tenant's): schedule,
                                                  status, next run, last invocation
  agent-api automations create <name> (--cron "m h dom mon dow" [--tz Zone] | --at time)
            (--agent id | --session id) --input "text"
                                                  a cron automation (IANA --tz, default UTC) or a
                                                  one-time one (--at, RFC 3339), into a new session of
                                                  --agent or into --session
  agent-api automations pause <automation>        no scheduled slot fires while paused
  agent-api automations resume <automation>
  agent-api automations run <automation>          run now (a manual invocation)
  agent-api secrets list [--limit n] [--after NAME]
                                                  the tenant's secrets: names and versions (admin)
  agent-api secrets set <NAME> [--value v]        set or rotate a secret (admin); the value is read
                                                  from stdin (one trailing newline dropped) unless
                                                  --value is given, and never printed
  agent-api secrets delete <NAME>                 delete a secret (admin)

Options:
  --url <url>      service URL   (env AGENT_API_URL, default http://127.0.0.1:3000)
  --key <key>      API key       (env AGENT_API_KEY, default dev-key-0001)
  --json           print raw JSON instead of text
  --yes            chat: approve every approval request without asking
  --enqueue        chat: when the session has an active run, queue a new run behind it instead of
                   steering the active one (what a busy session does by default)
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

/** All of a stream (stdin) as UTF-8 text. */
async function readAll(input: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of input) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
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
      value: { type: 'string' },
      cron: { type: 'string' },
      tz: { type: 'string' },
      at: { type: 'string' },
      input: { type: 'string' },
      'public-key': { type: 'string', multiple: true },
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
        print(table([['ID', 'TITLE', 'AGENT', 'STATUS', 'WORK', 'LAST ACTIVE'], ...page.data.map((s: Session) => [s.id, s.title ?? '-', s.agent_id, s.status, s.work_status, s.last_active_at])]));
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
        print(`${c.bold(s.title ?? s.id)}  ${c.dim(`${s.id} · ${s.agent_id} · ${s.status} · ${s.work_status} · revision ${s.revision}`)}\n`);
        for (const m of messages.data) print(`${c.cyan(m.role.padEnd(9))} ${textOf(m)}\n`);
        if (messages.has_more) print(c.dim('(older history continues: see the API for more pages)\n'));
        return 0;
      }
      if (sub === 'subagents') {
        const id = need(rest[0], 'session id: agent-api sessions subagents <session>');
        const page = await client.listSubagents(id, { limit, after: values.after });
        if (values.json) return json(page), 0;
        if (!page.data.length) return print('no subagents: this session\'s runs created none\n'), 0;
        print(
          table([
            ['ID', 'NAME', 'STATUS', 'WORK', 'AGENT', 'PARENT RUN', 'CREATED'],
            ...page.data.map((s: Session) => [s.id, s.subagent?.name ?? '-', s.subagent?.status ?? s.status, s.work_status, `${s.agent.id} v${s.agent.version}`, s.parent_run_id ?? '-', s.created_at]),
          ]),
        );
        if (page.has_more) print(c.dim(`next page: add --after ${page.last_id}\n`));
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
    case 'inputs': {
      const id = need(rest[0], 'input id: agent-api inputs show <input>');
      if (sub !== 'show') throw new UsageError(`unknown: inputs ${sub}`);
      const r = await client.getInput(id);
      if (values.json) return json(r), 0;
      print(describeInput(r, c) + '\n');
      return 0;
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
      if (sub === 'verify') {
        const file = need(values.file, '--file (the ndjson export, or - for stdin)');
        const keyFiles = values['public-key'] ?? [];
        if (!keyFiles.length) throw new UsageError('missing --public-key (PEM, or the JSON of GET /v1/admin/audit/public-key)');
        const keys = keyFiles.flatMap((f) => parsePublicKeys(readFileSync(f, 'utf8')));
        const input = file === '-' ? io.input : createReadStream(file, { encoding: 'utf8' });
        const v = await verifyExport(createInterface({ input, crlfDelay: Infinity }), keys);
        if (values.json) return json(v), v.ok ? 0 : 1;
        if (v.ok) {
          print(
            `${c.green('✓ export verified')}: ${v.records} records (seq ${v.first_seq ?? '-'}..${v.last_seq ?? '-'}) of ${v.tenant_id ?? '?'}, ${v.checkpoints} signed checkpoints` +
              (v.signed_up_to !== null ? `, signed up to seq ${v.signed_up_to}` : '') +
              '\n',
          );
          if (v.unsigned_tail > 0) print(c.yellow(`! ${v.unsigned_tail} records after the last checkpoint are covered by no signature\n`));
          if (!v.anchored) print(c.yellow(`! the first record's prev_hash is taken on trust (the export starts after no checkpoint)\n`));
          if (v.keyed_records > 0) print(c.yellow(`! ${v.keyed_records} records of the keyed era: links checked, hashes need AUDIT_HMAC_KEY\n`));
        } else {
          const b = v.first_bad!;
          print(`${c.red('✗ export does not verify')}: ${b.reason} at line ${b.line}${b.seq !== null ? `, seq ${b.seq}` : ''}${b.id ? ` (${b.id})` : ''}: ${b.message}\n`);
        }
        return v.ok ? 0 : 1;
      }
      if (sub === 'check-chain' || values.verify) {
        if (sub !== 'check-chain') io.err.write(c.yellow('audit --verify is deprecated: use `agent-api audit check-chain` (`audit verify --file` checks an export offline)\n'));
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
    case 'automations': {
      const schedule = (a: Automation) => (a.schedule.type === 'cron' ? `cron ${a.schedule.expression} (${a.schedule.timezone})` : `once ${a.schedule.at}`);
      const show = (a: Automation) => {
        if (values.json) return json(a), 0;
        print(`${a.id}  ${a.status}  ${schedule(a)}  next ${a.next_run_at ?? '-'}\n`);
        return 0;
      };
      if (sub === 'list' || sub === undefined) {
        const page = await client.listAutomations({ limit, after: values.after });
        if (values.json) return json(page), 0;
        if (!page.data.length) return print('no automations yet: agent-api automations create <name> --cron "0 9 * * 1-5" --agent support_agent --input "..."\n'), 0;
        print(
          table([
            ['ID', 'NAME', 'SCHEDULE', 'STATUS', 'NEXT RUN', 'LAST INVOCATION'],
            ...page.data.map((a: Automation) => [
              a.id,
              a.name,
              schedule(a),
              a.status,
              a.next_run_at ?? '-',
              a.last_invocation ? `${a.last_invocation.status}${a.last_invocation.run_id ? ` ${a.last_invocation.run_id}` : ''}${a.last_invocation.error ? ` (${a.last_invocation.error.code})` : ''}` : '-',
            ]),
          ]),
        );
        if (page.has_more) print(c.dim(`next page: add --after ${page.last_id}\n`));
        return 0;
      }
      if (sub === 'create') {
        const name = need(rest[0], 'name: agent-api automations create <name> (--cron expr [--tz Zone] | --at time) (--agent id | --session id) --input text');
        if (!values.cron === !values.at) throw new UsageError('give one of --cron "m h dom mon dow" or --at <RFC 3339 time>');
        if (!values.agent === !values.session) throw new UsageError('give one of --agent <id> (a new session each time) or --session <id>');
        const text = need(values.input, 'the input: --input "text"');
        const a = await client.createAutomation({
          name,
          schedule: values.cron ? { type: 'cron', expression: values.cron, timezone: values.tz ?? 'UTC' } : { type: 'once', at: values.at! },
          target: values.agent ? { type: 'new_session', agent_id: values.agent } : { type: 'session', session_id: values.session! },
          input: { role: 'user', content: [{ type: 'text', text }] },
        });
        return show(a);
      }
      if (sub === 'pause' || sub === 'resume') {
        const id = need(rest[0], `automation id: agent-api automations ${sub} <automation>`);
        return show(sub === 'pause' ? await client.pauseAutomation(id) : await client.resumeAutomation(id));
      }
      if (sub === 'run') {
        const id = need(rest[0], 'automation id: agent-api automations run <automation>');
        const inv = await client.invokeAutomation(id);
        if (values.json) return json(inv), 0;
        print(`${inv.id}  ${inv.status}\n`);
        io.err.write(c.dim(`queued; see it with: agent-api automations list (last invocation) or GET /v1/automations/${id}/invocations\n`));
        return 0;
      }
      throw new UsageError(`unknown: automations ${sub}`);
    }
    case 'secrets': {
      if (sub === 'list' || sub === undefined) {
        const page = await client.listSecrets({ limit, after: values.after });
        if (values.json) return json(page), 0;
        if (!page.data.length) return print('no secrets yet: agent-api secrets set <NAME> (value on stdin)\n'), 0;
        print(table([['NAME', 'VERSION', 'UPDATED', 'CREATED'], ...page.data.map((s: Secret) => [s.name, String(s.version), s.updated_at, s.created_at])]));
        if (page.has_more) print(c.dim(`next page: add --after ${page.last_id}\n`));
        return 0;
      }
      if (sub === 'set') {
        const name = need(rest[0], 'name: agent-api secrets set <NAME> [--value v] (else the value is read from stdin)');
        // stdin keeps the value out of shell history and the process list; `echo v |` adds one newline, dropped here.
        const value = values.value ?? (await readAll(io.input)).replace(/\r?\n$/, '');
        if (!value) throw new UsageError('the value is empty: pass it on stdin or with --value');
        const s = await client.putSecret(name, value);
        if (values.json) return json(s), 0;
        print(`${s.name} version ${s.version}\n`);
        io.err.write(c.dim(`${s.version === 1 ? 'set' : 'rotated'} secret ${s.name}; tool headers name it as \${secret:${s.name}}\n`));
        return 0;
      }
      if (sub === 'delete') {
        const name = need(rest[0], 'name: agent-api secrets delete <NAME>');
        await client.deleteSecret(name);
        if (values.json) return json({ name, deleted: true }), 0;
        print(`deleted ${name}\n`);
        return 0;
      }
      throw new UsageError(`unknown: secrets ${sub}`);
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

/** One line: an input's receipt (`inp_... steered -> run_... taken 12:00:01`). */
function describeInput(r: InputReceipt, c: ReturnType<typeof palette>): string {
  const taken = r.taken_at ? `taken ${r.taken_at}` : c.yellow('not taken yet');
  return `${c.bold(r.id)}  ${r.disposition} -> ${r.run_id}  ${taken}  ${c.dim(`message ${r.message_id}`)}`;
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
  if (!opts.json) io.err.write(c.dim(`run ${runId} (${receipt.status}) · input ${receipt.receipt.id} ${receipt.receipt.disposition}\n`));

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
        line(
          r.steered
            ? c.dim(`↳ steered into ${r.run_id} (${r.receipt.id}: agent-api inputs show ${r.receipt.id})`)
            : c.dim(`↳ the run had ended: a new run ${r.run_id} takes it (${r.receipt.id} ${r.receipt.disposition}; agent-api runs show ${r.run_id})`),
        );
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
