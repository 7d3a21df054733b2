import { Injectable } from '@nestjs/common';
import { EventEmitter } from 'node:events';

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
  cancelRequested(runId: string): void {
    this.emitter.emit(`cancel:${runId}`);
  }
  onCancel(runId: string, fn: () => void): () => void {
    this.emitter.on(`cancel:${runId}`, fn);
    return () => this.emitter.off(`cancel:${runId}`, fn);
  }
}
