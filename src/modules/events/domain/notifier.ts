/** "Rows were committed": only ids and sequences; subscribers read the rows themselves. */
export interface EventNotification {
  sessionId: string;
  runId: string;
  /** The run's last sequence after the commit. */
  lastSequence: number;
  /** The session's last session_sequence after the commit. */
  lastSessionSequence: number;
  /**
   * Set when the writer hands the committed events to its own node's RecentEvents (its
   * `origin`): that node's hub is told by RecentEvents and skips this notification, which would
   * often arrive first and make it read back from the database what it is about to be given.
   */
  origin?: string;
}

export interface NotificationListener {
  onEvents(n: EventNotification): void;
  /** Notifications may have been lost (e.g. the LISTEN connection dropped): re-read everything. */
  onResync(): void;
}

/** What /readyz and the metrics say about the notifier. */
export interface NotifierState {
  kind: 'in_process' | 'postgres' | 'nats';
  /** The cross-node channel is up (always true in-process). */
  connected: boolean;
  /** Streams are kept up to date by reading the database on a timer (the channel is down). */
  degraded: boolean;
}

/**
 * Port: fan-out signal between writers and stream hubs (on this node or any node).
 * `announce` is called inside the writing transaction and delivers only if it commits, never
 * before the commit (a subscriber must find the rows).
 */
export abstract class Notifier {
  private readonly listeners = new Set<NotificationListener>();
  /** Where a listener's failure is reported (it never stops the others). */
  protected abstract readonly logger: { error(message: string): void };
  abstract announce(n: EventNotification): Promise<void>;
  abstract state(): NotifierState;

  subscribe(listener: NotificationListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Calls every current listener; one that throws is logged and the rest still hear it. */
  protected emit(fn: (l: NotificationListener) => void): void {
    for (const l of [...this.listeners]) {
      try {
        fn(l);
      } catch (err) {
        this.logger.error(`listener failed: ${(err as Error).message}`);
      }
    }
  }
}

const SEP = '|';

/** `session|run|lastSequence|lastSessionSequence`, then `|origin` when there is one. */
export function encodeNotification(n: EventNotification): string {
  return [n.sessionId, n.runId, n.lastSequence, n.lastSessionSequence, ...(n.origin ? [n.origin] : [])].join(SEP);
}

export function decodeNotification(payload: string): EventNotification | null {
  const parts = payload.split(SEP);
  if (parts.length !== 4 && parts.length !== 5) return null;
  const [sessionId, runId, seq, sseq, origin] = parts;
  const lastSequence = Number(seq);
  const lastSessionSequence = Number(sseq);
  if (!sessionId || !runId || !Number.isSafeInteger(lastSequence) || !Number.isSafeInteger(lastSessionSequence)) return null;
  return { sessionId, runId, lastSequence, lastSessionSequence, ...(origin ? { origin } : {}) };
}
