import { Injectable, Logger } from '@nestjs/common';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { EventNotification, NotificationListener, Notifier, NotifierState } from '../domain/notifier';

/**
 * Single-node notifier (the embedded database: LISTEN/NOTIFY does not cross pglite-socket
 * connections). Announcements are delivered after the writing transaction commits, never on rollback.
 */
@Injectable()
export class InProcessNotifier extends Notifier {
  private readonly logger = new Logger('InProcessNotifier');
  private readonly listeners = new Set<NotificationListener>();

  constructor(private readonly uow: UnitOfWork) {
    super();
  }

  async announce(n: EventNotification): Promise<void> {
    this.uow.afterCommit(() => this.emit(n));
  }

  subscribe(listener: NotificationListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  state(): NotifierState {
    return { kind: 'in_process', connected: true, degraded: false };
  }

  private emit(n: EventNotification): void {
    for (const l of [...this.listeners]) {
      try {
        l.onEvents(n);
      } catch (err) {
        this.logger.error(`listener failed: ${(err as Error).message}`);
      }
    }
  }
}
