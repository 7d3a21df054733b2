import { Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { Principal } from '../../../common/auth/principal';
import { AppConfig } from '../../../common/config/app-config';
import { BatchWrite, UnitOfWork } from '../../../common/database/unit-of-work';
import { DomainError } from '../../../common/errors/domain-error';
import { toErrorResponse } from '../../../common/errors/error-envelope';
import { isId } from '../../../common/ids/ids';
import { fingerprintOf, isStorableError, isValidIdempotencyKey, scopeOf } from '../../idempotency/domain/fingerprint';
import { IdempotencyScope, IdempotencyStore, StoredResponse } from '../../idempotency/domain/idempotency.store';
import { ToolOutputInput } from '../../runs/application/commands/submit-tool-outputs/submit-tool-outputs.command';
import { ClientToolSpec } from '../../runs/domain/run.aggregate';
import type { SessionProps } from '../../sessions/domain/session.aggregate';
import { SessionEventFeed } from '../../compat-shared/session-event-feed';
import { SessionInputs } from '../../compat-shared/session-inputs';
import { nativeToolOutput } from '../../compat-shared/tool-output';
import { AgUiMessage, AgUiResumeEntry, AgUiTool } from '../domain/ag-ui-input';

/** What one AG-UI request started or continued: the native run and where its AG-UI run begins. */
export interface AgUiRunTarget {
  run_id: string;
  session_id: string;
  /** The run's events after this sequence belong to this AG-UI run (0: all of them). */
  after: number;
  /** The receipt of the request's user input (`inp_...`, GET /v1/inputs/{id}); absent for resume and tool outputs. */
  input_id?: string;
}

export interface AgUiRunRequest {
  agentId: string;
  threadId: string;
  runId: string;
  messages: AgUiMessage[];
  tools: AgUiTool[];
  resume: AgUiResumeEntry[];
}

const CLAIM_LOCK_MS = 30_000;
/** A thread name's session is remembered as long as the session lives (the record outlives any TTL in practice). */
const THREAD_TTL_MS = 100 * 365 * 24 * 3_600_000;
const ROUTE = '/ag-ui/agents/:agent_id';

/**
 * The AG-UI surface over the native commands (CONTRACT section 15, through the shared
 * `SessionInputs` and `SessionEventFeed` of the compatibility adapters), with no state of its own:
 * - `threadId` -> session: one of the caller's session ids (a foreign or missing one is the same
 *   404 `session_not_found`), or a name that maps, per caller and agent, to a session created on
 *   first use. The mapping is an idempotency record (scope `AG-UI thread agent_id=...`, key: the
 *   name, or `sha256:<hex>` of a name that is not a valid key) whose stored response names the
 *   session: the first request creates the session (metadata `ag_ui_thread`) in the transaction
 *   that completes the record; every later one, and a concurrent one, reads it back.
 * - `runId` -> idempotency key of the run request (scope `POST /ag-ui/agents/:agent_id` + the
 *   session): the stored response names the native run and the cursor the AG-UI run starts at,
 *   so the same `runId` again streams the same run from its start, never a second run.
 * - what the request does: `resume` entries decide the approvals of the session's waiting run;
 *   else trailing `tool` messages are the outputs of its pending client tool calls; else the
 *   newest `user` message starts a new run, with the request's `tools` as its client tools.
 */
@Injectable()
export class AgUiRunsService {
  constructor(
    private readonly inputs: SessionInputs,
    private readonly feed: SessionEventFeed,
    private readonly store: IdempotencyStore,
    private readonly uow: UnitOfWork,
    private readonly config: AppConfig,
  ) {}

  /** Starts or continues the native run of one AG-UI request (idempotent by `runId`). */
  async start(principal: Principal, req: AgUiRunRequest, audit?: (body: string) => BatchWrite | null): Promise<AgUiRunTarget> {
    if (!isValidIdempotencyKey(req.runId)) {
      throw new DomainError('invalid_request', 'runId must be 1 to 255 printable ASCII characters', { errors: [{ field: 'runId', message: 'must be 1..255 printable ASCII characters' }] });
    }
    const session = await this.threadSession(principal, req.agentId, req.threadId);
    const scope: IdempotencyScope = {
      tenantId: principal.tenantId,
      subjectId: principal.subjectId,
      scope: scopeOf('POST', ROUTE, { agent_id: req.agentId, thread: session.id }),
      key: req.runId,
    };
    // The same runId is the same AG-UI run whatever else the retry carries (a client that grew
    // its message list meanwhile): the key alone decides.
    const body = await this.once(scope, fingerprintOf({ runId: req.runId }), this.config.idempotencyTtlHours * 3_600_000, () => this.dispatch(principal, session, req), audit);
    return JSON.parse(body) as AgUiRunTarget;
  }

  private async dispatch(principal: Principal, session: Readonly<SessionProps>, req: AgUiRunRequest): Promise<AgUiRunTarget> {
    if (req.resume.length > 0) return this.resume(principal, session, req.resume);
    const trailingTools: AgUiMessage[] = [];
    for (let i = req.messages.length - 1; i >= 0 && req.messages[i].role === 'tool'; i--) trailingTools.unshift(req.messages[i]);
    if (trailingTools.length > 0) return this.toolOutputs(principal, session, trailingTools);
    const user = [...req.messages].reverse().find((m) => m.role === 'user');
    if (!user) throw invalid('messages', 'needs a user message (the input), tool messages answering pending tool calls, or resume entries');
    const text = textOf(user.content);
    if (text === '') throw invalid('messages', 'the newest user message has no text');
    const clientTools: ClientToolSpec[] = req.tools.map((t) => ({
      name: t.name,
      description: t.description ?? '',
      parameters: t.parameters && typeof t.parameters === 'object' ? (t.parameters as Record<string, unknown>) : { type: 'object', properties: {} },
    }));
    const { run, receipt } = await this.inputs.startRun(principal, session.id, { content: [{ type: 'text', text }], clientTools, metadata: { ag_ui_run_id: truncate(req.runId) } });
    return { run_id: run.id, session_id: session.id, after: 0, input_id: receipt.id };
  }

  /**
   * `resume`: each entry answers the interrupt it names (its `interruptId`) on the session's active
   * run: an approval (decided), or `ask_user`'s question (an `input_required` interrupt, named by
   * its tool call id): its payload (`{answer}` or a string) is the session's next input, which
   * answers it (CONTRACT 17); a cancelled one cancels the run.
   */
  private async resume(principal: Principal, session: Readonly<SessionProps>, entries: AgUiResumeEntry[]): Promise<AgUiRunTarget> {
    const runId = this.activeRun(session, 'resume');
    const after = await this.feed.head(runId);
    const asking = (await this.inputs.runView(principal, runId)).run.state.pending.filter((p) => p.status === 'awaiting_input').map((p) => p.tool_call_id);
    for (const entry of entries) {
      if (asking.includes(entry.interruptId)) {
        if (entry.status === 'cancelled') {
          await this.inputs.cancelActive(principal, session.id);
          continue;
        }
        const payload = entry.payload as { answer?: unknown; text?: unknown } | string | undefined;
        const answer = typeof payload === 'string' ? payload : typeof payload?.answer === 'string' ? payload.answer : typeof payload?.text === 'string' ? payload.text : null;
        if (answer === null || answer === '') throw invalid('resume', 'an input_required entry needs payload.answer (or a string payload)');
        const { run } = await this.inputs.startRun(principal, session.id, { content: [{ type: 'text', text: answer }], concurrency: 'steer' });
        // The question closed meanwhile (answered, cancelled, expired): the input started a run of its own, streamed instead.
        if (run.id !== runId) return { run_id: run.id, session_id: session.id, after: 0 };
        continue;
      }
      const payload = (entry.payload ?? {}) as { decision?: unknown; reason?: unknown };
      let decision: 'approve' | 'reject';
      if (entry.status === 'cancelled') decision = 'reject';
      else if (payload.decision === 'approve' || payload.decision === 'reject') decision = payload.decision;
      else throw invalid('resume', 'a resolved entry needs payload.decision "approve" or "reject"');
      const reason = typeof payload.reason === 'string' ? payload.reason : entry.status === 'cancelled' ? 'cancelled by the client' : null;
      await this.inputs.decideApproval(principal, runId, entry.interruptId, decision, reason);
    }
    return { run_id: runId, session_id: session.id, after };
  }

  /** Trailing `tool` messages: the outputs of the active run's pending client tool calls. */
  private async toolOutputs(principal: Principal, session: Readonly<SessionProps>, tools: AgUiMessage[]): Promise<AgUiRunTarget> {
    const runId = this.activeRun(session, 'tool messages');
    const view = await this.inputs.runView(principal, runId);
    const pending = new Set(view.run.state.pending.filter((p) => p.status === 'awaiting_client').map((p) => p.tool_call_id));
    const outputs: ToolOutputInput[] = tools
      .filter((m) => typeof m.toolCallId === 'string' && pending.has(m.toolCallId))
      .map((m) => (typeof m.error === 'string' && m.error !== '' ? { tool_call_id: m.toolCallId!, error: { message: m.error } } : { tool_call_id: m.toolCallId!, output: nativeToolOutput(textOf(m.content)) }));
    if (outputs.length === 0) {
      throw new DomainError('tool_output_not_expected', 'no tool message answers a pending tool call of this thread', { tool_call_ids: tools.map((m) => m.toolCallId ?? null) });
    }
    await this.inputs.submitToolOutputs(principal, runId, outputs);
    return { run_id: runId, session_id: session.id, after: view.lastSequence };
  }

  private activeRun(session: Readonly<SessionProps>, what: string): string {
    if (!session.activeRunId) throw new DomainError('run_finished', `${what}: this thread has no run waiting for an answer`, { session_id: session.id });
    return session.activeRunId;
  }

  /** The session a threadId names (CONTRACT section 15). */
  private async threadSession(principal: Principal, agentId: string, threadId: string): Promise<Readonly<SessionProps>> {
    if (isId(threadId, 'sess')) {
      const session = await this.inputs.session(principal, threadId);
      if (session.agent.id !== agentId) {
        throw new DomainError('invalid_request', `thread ${threadId} belongs to agent ${session.agent.id}, not ${agentId}`, { errors: [{ field: 'threadId', message: 'the session runs another agent' }] });
      }
      return session;
    }
    const key = isValidIdempotencyKey(threadId) ? threadId : `sha256:${createHash('sha256').update(threadId, 'utf8').digest('hex')}`;
    const scope: IdempotencyScope = { tenantId: principal.tenantId, subjectId: principal.subjectId, scope: `AG-UI thread agent_id=${agentId}`, key };
    const body = await this.once(
      scope,
      fingerprintOf({ threadId }),
      THREAD_TTL_MS,
      async () => {
        const s = await this.inputs.createSession(principal, { agentId, metadata: { ag_ui_thread: truncate(threadId) } });
        return { session_id: s.id };
      },
      undefined,
      // A failed creation (an unknown agent) is not remembered: the name stays free.
      false,
    );
    const { session_id } = JSON.parse(body) as { session_id: string };
    return this.inputs.session(principal, session_id);
  }

  /**
   * Runs `op` once per idempotency key: the first caller runs it in a transaction that also
   * completes the record; later ones get the stored body (a stored error is thrown again as
   * stored); a concurrent one waits for the first to finish.
   */
  private async once(scope: IdempotencyScope, fingerprint: string, ttlMs: number, op: () => Promise<unknown>, audit?: (body: string) => BatchWrite | null, storeErrors = true): Promise<string> {
    const until = Date.now() + 10_000;
    for (;;) {
      const claim = await this.store.claim(scope, fingerprint, CLAIM_LOCK_MS, ttlMs);
      switch (claim.kind) {
        case 'replay': {
          const body = replayed(claim.response);
          const record = audit?.(body);
          if (record) await this.uow.write(record);
          return body;
        }
        case 'conflict':
          throw new DomainError('idempotency_conflict', 'this id was used with a different request', { idempotency_key: scope.key });
        case 'in_progress':
          if (Date.now() > until) throw new DomainError('idempotency_in_progress', 'a request with this id is still being processed', { idempotency_key: scope.key, retry_after_ms: 1000 });
          await new Promise((r) => setTimeout(r, 50));
          continue;
        case 'claimed':
          try {
            return await this.uow.run(async () => {
              const text = JSON.stringify(await op());
              const record = audit?.(text);
              await this.uow.write(this.store.completion(claim.recordId, { status: 200, body: text, headers: {} }, 'completed'), ...(record ? [record] : []));
              return text;
            });
          } catch (err) {
            const res = toErrorResponse(err, 'ag-ui');
            const e = res.body.error;
            if (storeErrors && isStorableError(res.status, e.code, e.retryable)) {
              await this.store.complete(claim.recordId, { status: res.status, body: JSON.stringify(res.body), headers: res.headers ?? {} }, 'completed');
            } else {
              await this.store.release(claim.recordId).catch(() => undefined);
            }
            throw err;
          }
      }
    }
  }
}

/** A stored outcome: its body, or the stored error thrown again. */
function replayed(r: StoredResponse): string {
  if (r.status >= 400) {
    const body = JSON.parse(r.body ?? '{}') as { error?: { code?: string; message?: string; details?: Record<string, unknown> } };
    throw new DomainError((body.error?.code ?? 'internal_error') as never, body.error?.message ?? 'stored error', body.error?.details ?? {});
  }
  return r.body ?? 'null';
}

function invalid(field: string, message: string): DomainError {
  return new DomainError('invalid_request', `${field}: ${message}`, { errors: [{ field, message }] });
}

function truncate(s: string): string {
  return s.length > 200 ? s.slice(0, 200) : s;
}

/** The text of an AG-UI message's content (a string or content parts; text parts only). */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((p) => p && typeof p === 'object' && (p as { type?: unknown }).type === 'text' && typeof (p as { text?: unknown }).text === 'string')
    .map((p) => (p as { text: string }).text)
    .join('');
}
