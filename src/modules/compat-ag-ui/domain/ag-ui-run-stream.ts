import type { PublicRunEvent } from '../../events/domain/run-event';
import { AgUiEvent, AgUiEventMapper } from './ag-ui-event-mapper';

/** A native run this AG-UI run follows: its mapper, its events not yet mapped, and the subagent run whose end it waits for. */
interface Source {
  mapper: AgUiEventMapper;
  queue: PublicRunEvent[];
  /** Set while its next event is a `subagent.completed` of a subagent run whose own end has not been mapped yet. */
  awaiting: { runId: string; status: string } | null;
}

/**
 * One AG-UI run over a native run and the runs of its subagents (CONTRACT 16), as one stream: a
 * pure state machine fed with each run's public events, in order per run (the runs' streams
 * interleave freely). The run's own events map as `AgUiEventMapper` maps them; `subagent.created`
 * (and a `send_subagent_input` that starts a subagent's next run) opens `SUBAGENT_STARTED`
 * (`subagentRunId`: the subagent's run id, `name`, `parentToolCallId`; `parentSubagentRunId` for a
 * subagent's own subagent) and asks the caller to `follow` that run; the subagent run's events
 * then map with `subagentRunId` on every text, tool and step event, ending with
 * `SUBAGENT_FINISHED` (completed, `result`: its final text) or `SUBAGENT_ERROR`. So that a
 * subagent's end comes before what its parent did after learning it, a run's `subagent.completed`
 * holds that run's later events until the subagent's own end is mapped (or `release` gives up
 * waiting). When the AG-UI run ends while subagents still work, each ends its segment
 * `SUBAGENT_FINISHED` `outcome: {type: "suspended"}` first - the verifier's rule that no subagent
 * is active at `RUN_FINISHED`.
 */
export class AgUiRunStream {
  private readonly root: Source;
  private readonly subagents = new Map<string, Source>();
  /** Subagent (session) id -> the name `create_subagent` gave it. */
  private readonly names = new Map<string, string>();

  constructor(
    private readonly threadId: string,
    private readonly runId: string,
    private readonly follow: (subagentRunId: string) => void,
    private readonly now: () => number = Date.now,
  ) {
    this.root = { mapper: new AgUiEventMapper(threadId, runId, now), queue: [], awaiting: null };
  }

  get done(): boolean {
    return this.root.mapper.done;
  }

  /** Whether a run's events wait for a subagent's end (the caller releases them after a while). */
  get waiting(): boolean {
    return !this.done && [this.root, ...this.subagents.values()].some((s) => s.awaiting !== null);
  }

  start(): AgUiEvent[] {
    return this.root.mapper.start();
  }

  /** Events of the AG-UI run's own native run. */
  onRun(events: PublicRunEvent[]): AgUiEvent[] {
    if (this.done) return [];
    this.root.queue.push(...events);
    return this.drain();
  }

  /** Events of a subagent run this stream follows. */
  onSubagentRun(subagentRunId: string, events: PublicRunEvent[]): AgUiEvent[] {
    const source = this.subagents.get(subagentRunId);
    if (this.done || !source || source.mapper.done) return [];
    source.queue.push(...events);
    return this.drain();
  }

  /** Stops waiting for subagents' own ends: each awaited one ends as its parent learnt it. */
  release(): AgUiEvent[] {
    const out: AgUiEvent[] = [];
    for (const s of [this.root, ...this.subagents.values()]) {
      if (!s.awaiting) continue;
      out.push(...(this.subagents.get(s.awaiting.runId)?.mapper.endAs(s.awaiting.status) ?? []));
    }
    return [...out, ...this.drain()];
  }

  fail(code: string, message: string): AgUiEvent[] {
    return [...this.suspendAll(), ...this.root.mapper.fail(code, message)];
  }

  private drain(): AgUiEvent[] {
    const out: AgUiEvent[] = [];
    for (let progress = true; progress && !this.done; ) {
      progress = false;
      for (const source of [this.root, ...this.subagents.values()]) {
        while (source.queue.length > 0 && !this.done && !source.mapper.done) {
          if (!this.step(source, out)) break;
          progress = true;
        }
      }
    }
    return out;
  }

  /** Maps the source's next event; false when it must wait for a subagent's end first. */
  private step(source: Source, out: AgUiEvent[]): boolean {
    const e = source.queue[0];
    const d = e.data as Record<string, any>;
    if (e.type === 'subagent.completed') {
      const sub = this.subagents.get(String(d.run_id));
      if (sub && !sub.mapper.done) {
        source.awaiting = { runId: String(d.run_id), status: String(d.status) };
        return false;
      }
      source.awaiting = null;
    }
    source.queue.shift();
    const ends = source === this.root && (e.type === 'run.finished' || (e.type === 'run.waiting' && d.status !== 'waiting_for_subagents'));
    if (ends) out.push(...this.suspendAll());
    out.push(...source.mapper.map(e));
    if (e.type === 'subagent.created') {
      this.names.set(String(d.subagent_id), String(d.name ?? d.subagent_id));
      out.push(...this.open(source, String(d.run_id), String(d.name ?? d.subagent_id), String(d.tool_call_id)));
    } else if (e.type === 'tool.completed' && d.tool_name === 'send_subagent_input' && d.result && typeof d.result.run_id === 'string') {
      const id = String(d.result.subagent_id ?? '');
      out.push(...this.open(source, d.result.run_id, this.names.get(id) ?? id, String(d.tool_call_id)));
    }
    return true;
  }

  private open(parent: Source, subagentRunId: string, name: string, toolCallId: string): AgUiEvent[] {
    if (this.subagents.has(subagentRunId) || parent.mapper.done) return [];
    this.subagents.set(subagentRunId, { mapper: new AgUiEventMapper(this.threadId, this.runId, this.now, subagentRunId), queue: [], awaiting: null });
    this.follow(subagentRunId);
    const parentSubagentRunId = parent.mapper.subagentRunId;
    return [{ type: 'SUBAGENT_STARTED', timestamp: this.now(), subagentRunId, name, parentToolCallId: toolCallId, ...(parentSubagentRunId !== undefined ? { parentSubagentRunId } : {}) }];
  }

  private suspendAll(): AgUiEvent[] {
    const out: AgUiEvent[] = [];
    for (const s of this.subagents.values()) out.push(...s.mapper.suspend());
    return out;
  }
}
