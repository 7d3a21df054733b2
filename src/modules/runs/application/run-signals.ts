import { Injectable } from '@nestjs/common';
import { EventEmitter } from 'node:events';
import type { SubagentApproval } from '../domain/run-decider';
import type { SubagentCancel } from '../domain/run.aggregate';

/**
 * In-process nudges: "a run was queued / resumed" wakes this node's worker at once, "cancel run X"
 * and "input steered to run X" reach its executor at once. Other nodes learn the same from polling and heartbeats.
 */
@Injectable()
export class RunSignals {
  private readonly emitter = new EventEmitter();

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  workAvailable(): void {
    this.emitter.emit('work');
  }
  onWorkAvailable(fn: () => void): () => void {
    this.emitter.on('work', fn);
    return () => this.emitter.off('work', fn);
  }
  inputSteered(runId: string): void {
    this.emitter.emit(`steer:${runId}`);
  }
  onInputSteered(runId: string, fn: () => void): () => void {
    this.emitter.on(`steer:${runId}`, fn);
    return () => this.emitter.off(`steer:${runId}`, fn);
  }
  /** A subagent's run ended (committed): its parent run is told (SubagentRelay). */
  subagentRunEnded(run: { id: string; parent: { run_id: string; subagent_id: string } }): void {
    this.emitter.emit('subagent-ended', run);
  }
  onSubagentRunEnded(fn: (run: { id: string; parent: { run_id: string; subagent_id: string } }) => void): () => void {
    this.emitter.on('subagent-ended', fn);
    return () => this.emitter.off('subagent-ended', fn);
  }
  /**
   * A parent committed that it started these subagent runs: what they did before the parent knew
   * them (ended, asked for an approval: their reports found a parent that did not know them yet) is reported now (SubagentRelay).
   */
  subagentRunsStarted(parentRunId: string, runs: ReadonlyArray<{ subagent_id: string; run_id: string }>): void {
    this.emitter.emit('subagent-started', parentRunId, [...runs]);
  }
  onSubagentRunsStarted(fn: (parentRunId: string, runs: Array<{ subagent_id: string; run_id: string }>) => void): () => void {
    this.emitter.on('subagent-started', fn);
    return () => this.emitter.off('subagent-started', fn);
  }
  /** An approval was requested inside a subagent (committed): its parent run shows it (SubagentRelay). */
  subagentApprovalRequested(parent: { run_id: string; subagent_id: string }, approval: SubagentApproval): void {
    this.emitter.emit('subagent-approval', parent, approval);
  }
  onSubagentApprovalRequested(fn: (parent: { run_id: string; subagent_id: string }, approval: SubagentApproval) => void): () => void {
    this.emitter.on('subagent-approval', fn);
    return () => this.emitter.off('subagent-approval', fn);
  }
  /** A parent's cancel or end, or `close_subagent` (committed): these subagent runs are cancelled, each with its reason (SubagentRelay). */
  subagentRunsToCancel(cancels: ReadonlyArray<SubagentCancel>, by: string): void {
    this.emitter.emit('subagent-cancel', cancels.map((c) => ({ ...c })), by);
  }
  onSubagentRunsToCancel(fn: (cancels: SubagentCancel[], by: string) => void): () => void {
    this.emitter.on('subagent-cancel', fn);
    return () => this.emitter.off('subagent-cancel', fn);
  }
  /** `close_subagent` (committed): these subagent sessions are marked closed (SubagentRelay). */
  subagentsClosed(tenantId: string, sessionIds: readonly string[]): void {
    this.emitter.emit('subagent-closed', tenantId, [...sessionIds]);
  }
  onSubagentsClosed(fn: (tenantId: string, sessionIds: string[]) => void): () => void {
    this.emitter.on('subagent-closed', fn);
    return () => this.emitter.off('subagent-closed', fn);
  }
  cancelRequested(runId: string): void {
    this.emitter.emit(`cancel:${runId}`);
  }
  onCancel(runId: string, fn: () => void): () => void {
    this.emitter.on(`cancel:${runId}`, fn);
    return () => this.emitter.off(`cancel:${runId}`, fn);
  }
}
