/** Counter and retention state of one stream (`sess_...` or `run_...`). */
export interface EventStreamState {
  /** The last assigned sequence (session streams: session_sequence); 0 when none. */
  lastSequence: number;
  /** Events with a sequence <= this were deleted by retention; a cursor below it is expired. */
  purgedThrough: number;
}

export interface PurgeResult {
  runs: number;
  events: number;
}

/**
 * Port next to `EventStore` (kept separate so that writers' fakes of `EventStore` stay small):
 * stream counters for cursor checks, and retention.
 */
export abstract class EventStreams {
  abstract state(streamId: string): Promise<EventStreamState>;
  /**
   * Deletes every event of up to `maxRuns` runs whose `run.finished` happened before `cutoff`
   * and records `purged_through` on the run and session streams.
   */
  abstract purgeFinishedRuns(cutoff: Date, maxRuns: number): Promise<PurgeResult>;
}
