import type { RunState } from './run-state';

/**
 * The model context of a run from its session's history: everything up to the run's input, plus
 * what the run added (completed assistant messages, tool results, steered inputs it took, each
 * right before the message of the turn that took it). Input of runs queued behind it, and input
 * steered to it that it has not taken, are not part of it.
 */
export function contextOf<M extends { id: string; sequence: number; runId: string | null; role: string; status: string }>(
  history: M[],
  run: Pick<RunState, 'id' | 'userMessageId' | 'state'>,
): M[] {
  const inputSeq = history.find((m) => m.id === run.userMessageId)?.sequence ?? Number.MAX_SAFE_INTEGER;
  const taken = new Map(run.state.inputs.map((i) => [i.message_id, i.before]));
  const steered: M[] = [];
  const out: M[] = [];
  for (const m of history) {
    if (m.role === 'assistant' && m.status !== 'completed') continue;
    if (taken.has(m.id)) {
      steered.push(m);
      continue;
    }
    if (m.sequence <= inputSeq) out.push(m);
    else if (m.runId === run.id && m.role !== 'user') out.push(m);
  }
  for (const m of steered) {
    const at = out.findIndex((x) => x.id === taken.get(m.id));
    if (at >= 0) out.splice(at, 0, m);
    else out.push(m);
  }
  return out;
}
