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

export interface PartitionDropResult {
  /** Partitions dropped, and the events they held. */
  partitions: number;
  events: number;
  /** Partitions past the cutoff kept because a run with events in them had not finished before it. */
  postponed: number;
}

/**
 * Port next to `EventStore` (kept separate so that writers' fakes of `EventStore` stay small):
 * stream counters for cursor checks, and retention.
 */
export abstract class EventStreams {
  abstract state(streamId: string): Promise<EventStreamState>;
  /**
   * Deletes every event of up to `maxRuns` runs whose `run.finished` happened before `cutoff`
   * and records `purged_through` on the run and session streams. Only in the default partition
   * (rows no time partition covered): the time partitions go whole with `dropExpiredPartitions`.
   */
  abstract purgeFinishedRuns(cutoff: Date, maxRuns: number): Promise<PurgeResult>;
  /** Creates the time partitions of `widthDays` each ahead of writes, until one reaches `until`; returns how many were created. */
  abstract ensurePartitions(widthDays: number, until: Date): Promise<number>;
  /** Drops the partitions whose range ends before `cutoff` and whose runs all finished before it (recording `purged_through`). */
  abstract dropExpiredPartitions(cutoff: Date): Promise<PartitionDropResult>;
}
