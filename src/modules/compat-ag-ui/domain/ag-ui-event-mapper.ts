import type { PublicRunEvent } from '../../events/domain/run-event';

/** One AG-UI 1.0 event as it goes on the wire (`@ag-ui/core`'s event shapes, camelCase). */
export type AgUiEvent = { type: string } & Record<string, unknown>;

/**
 * What the run waits for, as an AG-UI interrupt (`RunFinishedInterruptOutcome.interrupts[]`): an
 * approval (`tool_approval`, id = the approval id) or `ask_user`'s question (`input_required`,
 * id = the tool call id; answered by a resume entry whose payload is the answer, CONTRACT 17).
 */
export interface AgUiInterrupt {
  id: string;
  reason: 'tool_approval' | 'input_required';
  message: string;
  toolCallId: string;
  responseSchema?: Record<string, unknown>;
  expiresAt?: string;
  metadata: { tool_name: string; run_id: string };
}

/**
 * Turns one native run's public events (already projected for the caller's audience) into the
 * AG-UI 1.0 events of one AG-UI run: a pure state machine, one per response stream. It opens
 * with `RUN_STARTED` and closes with exactly one `RUN_FINISHED` or `RUN_ERROR`, before which every
 * text message, tool call and step it opened is closed (the rules `@ag-ui/client`'s verifier
 * enforces). A model turn is a step (`STEP_STARTED`/`STEP_FINISHED`, named `turn_<n>`); its text
 * is a text message with the native message id; each requested tool call is
 * `TOOL_CALL_START`/`ARGS`/`END` (parent: the turn's message) and its outcome `TOOL_CALL_RESULT`.
 * The AG-UI run ends where the native run stops for the caller: waiting for an approval
 * (`interrupt` outcome), waiting for client tools (`success` with `pendingToolCallIds`), or
 * finished (`success`, `cancelled`, or `RUN_ERROR` with the run's error code); not while it waits
 * for its subagents (`waiting_for_subagents`: it goes on by itself). A subagent's run (CONTRACT 16)
 * maps with a mapper of its own (see `AgUiRunStream`).
 */
export class AgUiEventMapper {
  private started = false;
  private finished = false;
  private stepName: string | null = null;
  private turnDone = false;
  private turns = 0;
  private textOpen: string | null = null;
  private textSent = new Set<string>();
  private readonly assistantMessages = new Set<string>();
  /** Tool calls announced in this stream, in order, and whether their outcome came. */
  private readonly calls = new Map<string, boolean>();
  private readonly interrupts: AgUiInterrupt[] = [];

  /** The final text of the run (a subagent's `SUBAGENT_FINISHED.result`). */
  private lastText: string | null = null;

  /**
   * `subagentRunId`: this mapper follows a subagent's run (CONTRACT 16) inside the AG-UI run of its
   * parent: every event carries it, nothing opens or closes the AG-UI run, and the run's end is
   * `SUBAGENT_FINISHED` (completed) or `SUBAGENT_ERROR` (failed, cancelled, expired, terminated).
   */
  constructor(
    private readonly threadId: string,
    private readonly runId: string,
    private readonly now: () => number = Date.now,
    readonly subagentRunId?: string,
  ) {
    if (subagentRunId !== undefined) this.started = true;
  }

  get done(): boolean {
    return this.finished;
  }

  /** The opening event. */
  start(input?: unknown): AgUiEvent[] {
    if (this.started) return [];
    this.started = true;
    return [this.ev('RUN_STARTED', { threadId: this.threadId, runId: this.runId, protocolVersion: '1.0', ...(input === undefined ? {} : { input }) })];
  }

  /** The AG-UI events for one native event (nothing once the AG-UI run is finished). */
  map(e: PublicRunEvent): AgUiEvent[] {
    if (this.finished) return [];
    const out: AgUiEvent[] = this.start();
    const d = e.data as Record<string, any>;
    // A finished turn's step closes at its first event that is not part of the turn.
    if (this.turnDone && e.type !== 'tool.requested' && e.type !== 'usage') out.push(...this.closeStep());
    switch (e.type) {
      case 'message.started':
        if (d.role === 'assistant') {
          out.push(...this.closeStep());
          this.assistantMessages.add(d.message_id);
          this.stepName = `turn_${++this.turns}`;
          this.turnDone = false;
          out.push(this.ev('STEP_STARTED', { stepName: this.stepName }));
        }
        break;
      case 'message.delta':
        if (this.assistantMessages.has(d.message_id) && typeof d.delta === 'string' && d.delta !== '') {
          out.push(...this.openText(d.message_id));
          out.push(this.ev('TEXT_MESSAGE_CONTENT', { messageId: d.message_id, delta: d.delta }));
        }
        break;
      case 'message.completed': {
        if (!this.assistantMessages.has(d.message_id)) break;
        const text = textOf(d.content);
        if (!this.textSent.has(d.message_id) && text !== '') {
          // Nothing streamed (the model answered at once): the whole text as one delta.
          out.push(...this.openText(d.message_id));
          out.push(this.ev('TEXT_MESSAGE_CONTENT', { messageId: d.message_id, delta: text }));
        }
        out.push(...this.closeText());
        this.turnDone = true;
        if (!(Array.isArray(d.content) && d.content.some((p: { type?: string }) => p?.type === 'tool_call'))) this.lastText = text;
        break;
      }
      case 'tool.requested': {
        const id = String(d.tool_call_id);
        if (this.calls.has(id)) break;
        this.calls.set(id, false);
        const parent = [...this.assistantMessages].pop();
        out.push(this.ev('TOOL_CALL_START', { toolCallId: id, toolCallName: String(d.tool_name), ...(parent ? { parentMessageId: parent } : {}) }));
        out.push(this.ev('TOOL_CALL_ARGS', { toolCallId: id, delta: JSON.stringify(d.arguments ?? {}) }));
        out.push(this.ev('TOOL_CALL_END', { toolCallId: id }));
        break;
      }
      case 'tool.completed':
      case 'tool.failed': {
        const id = String(d.tool_call_id);
        this.calls.set(id, true);
        const content = e.type === 'tool.completed' ? JSON.stringify(d.result ?? null) : JSON.stringify({ error: d.error ?? null });
        out.push(this.ev('TOOL_CALL_RESULT', { messageId: `${id}_result`, toolCallId: id, content, role: 'tool' }));
        break;
      }
      case 'approval.requested':
        if (this.subagentRunId !== undefined) break; // the parent's AG-UI run does not end for it
        this.interrupts.push({
          id: String(d.approval_id),
          reason: 'tool_approval',
          message: `Approve the call of ${String(d.tool_name)}?`,
          toolCallId: String(d.tool_call_id),
          ...(typeof d.expires_at === 'string' ? { expiresAt: d.expires_at } : {}),
          metadata: { tool_name: String(d.tool_name), run_id: e.run_id },
        });
        break;
      case 'run.input_requested':
        if (this.subagentRunId !== undefined) break;
        this.interrupts.push({
          id: String(d.tool_call_id),
          reason: 'input_required',
          message: String(d.question ?? ''),
          toolCallId: String(d.tool_call_id),
          responseSchema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] },
          ...(typeof d.expires_at === 'string' ? { expiresAt: d.expires_at } : {}),
          metadata: { tool_name: 'ask_user', run_id: e.run_id },
        });
        break;
      case 'run.waiting': {
        out.push(...this.closeAll());
        // A subagent waits inside its parent's AG-UI run; a parent waiting for its subagents goes on by itself.
        if (this.subagentRunId !== undefined || d.status === 'waiting_for_subagents') break;
        const reason = d.status === 'waiting_for_approval' ? 'tool_approval' : d.status === 'waiting_for_input' ? 'input_required' : null;
        const interrupts = this.interrupts.filter((i) => i.reason === reason);
        if (interrupts.length > 0) {
          out.push(this.finish({ outcome: { type: 'interrupt', interrupts } }));
        } else {
          const pending = [...this.calls].filter(([, answered]) => !answered).map(([id]) => id);
          out.push(this.finish({ outcome: { type: 'success', ...(pending.length ? { pendingToolCallIds: pending } : {}) } }));
        }
        break;
      }
      case 'run.finished':
        out.push(...this.closeAll());
        if (this.subagentRunId !== undefined) out.push(...this.endSubagent(String(d.status), d.error as { code?: string; message?: string } | null, d.termination_reason as string | null));
        else if (d.status === 'completed') out.push(this.finish({ outcome: { type: 'success' } }));
        else if (d.status === 'cancelled') out.push(this.finish({ outcome: { type: 'cancelled' } }));
        else {
          const error = d.error as { code?: string; message?: string } | null;
          const code = error?.code ?? (d.termination_reason ? `terminated_${String(d.termination_reason)}` : `run_${String(d.status)}`);
          const message = error?.message ?? `the run ended ${String(d.status)}${d.termination_reason ? ` (${String(d.termination_reason)})` : ''}`;
          this.finished = true;
          out.push(this.ev('RUN_ERROR', { message, code }));
        }
        break;
      default:
        break;
    }
    return out;
  }

  /**
   * A subagent's end as its parent learnt it (`subagent.completed`) when its own run's events did
   * not say so in time: its open text closed, then SUBAGENT_FINISHED or SUBAGENT_ERROR.
   */
  endAs(status: string): AgUiEvent[] {
    if (this.finished || this.subagentRunId === undefined) return [];
    return [...this.closeAll(), ...this.endSubagent(status, null, null)];
  }

  /**
   * The AG-UI run ends while this subagent still works: its segment of the run ends `suspended`
   * (the subagent goes on; its turns stay readable natively).
   */
  suspend(): AgUiEvent[] {
    if (this.finished || this.subagentRunId === undefined) return [];
    const out = this.closeAll();
    this.finished = true;
    out.push(this.ev('SUBAGENT_FINISHED', { outcome: { type: 'suspended' } }));
    return out;
  }

  private endSubagent(status: string, error: { code?: string; message?: string } | null, terminationReason: string | null): AgUiEvent[] {
    this.finished = true;
    if (status === 'completed') return [this.ev('SUBAGENT_FINISHED', { outcome: { type: 'success' }, ...(this.lastText !== null ? { result: this.lastText } : {}) })];
    const code = error?.code ?? (terminationReason ? `terminated_${terminationReason}` : `run_${status}`);
    const message = error?.message ?? `the subagent's run ended ${status}${terminationReason ? ` (${terminationReason})` : ''}`;
    return [this.ev('SUBAGENT_ERROR', { message, code })];
  }

  /** A native error before or while streaming (e.g. the run vanished): the closing `RUN_ERROR`. */
  fail(code: string, message: string): AgUiEvent[] {
    if (this.finished) return [];
    const out = [...this.start(), ...this.closeAll()];
    this.finished = true;
    out.push(this.ev('RUN_ERROR', { message, code }));
    return out;
  }

  private openText(messageId: string): AgUiEvent[] {
    if (this.textOpen === messageId) return [];
    const out = this.closeText();
    this.textOpen = messageId;
    this.textSent.add(messageId);
    out.push(this.ev('TEXT_MESSAGE_START', { messageId, role: 'assistant' }));
    return out;
  }

  private closeText(): AgUiEvent[] {
    if (this.textOpen === null) return [];
    const messageId = this.textOpen;
    this.textOpen = null;
    return [this.ev('TEXT_MESSAGE_END', { messageId })];
  }

  private closeStep(): AgUiEvent[] {
    const out = this.closeText();
    this.turnDone = false;
    if (this.stepName === null) return out;
    out.push(this.ev('STEP_FINISHED', { stepName: this.stepName }));
    this.stepName = null;
    return out;
  }

  private closeAll(): AgUiEvent[] {
    return this.closeStep();
  }

  private finish(fields: Record<string, unknown>): AgUiEvent {
    this.finished = true;
    return this.ev('RUN_FINISHED', { threadId: this.threadId, runId: this.runId, ...fields });
  }

  private ev(type: string, fields: Record<string, unknown>): AgUiEvent {
    return { type, timestamp: this.now(), ...(this.subagentRunId !== undefined ? { subagentRunId: this.subagentRunId } : {}), ...fields };
  }
}

function textOf(content: unknown): string {
  if (!Array.isArray(content)) return '';
  return content
    .filter((p): p is { type: 'text'; text: string } => !!p && typeof p === 'object' && (p as any).type === 'text' && typeof (p as any).text === 'string')
    .map((p) => p.text)
    .join('');
}
