import { Injectable } from '@nestjs/common';
import { EventEmitter } from 'node:events';

/**
 * In-process nudges: "a run was queued / resumed" wakes this node's worker at once, "cancel run X"
 * reaches its executor at once. Other nodes learn the same from polling and heartbeats.
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
  cancelRequested(runId: string): void {
    this.emitter.emit(`cancel:${runId}`);
  }
  onCancel(runId: string, fn: () => void): () => void {
    this.emitter.on(`cancel:${runId}`, fn);
    return () => this.emitter.off(`cancel:${runId}`, fn);
  }
}
