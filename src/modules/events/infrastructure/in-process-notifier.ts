import { Injectable, Logger } from '@nestjs/common';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { EventNotification, Notifier, NotifierState } from '../domain/notifier';

/**
 * Single-node notifier (the embedded database: LISTEN/NOTIFY does not cross pglite-socket
 * connections). Announcements are delivered after the writing transaction commits, never on rollback.
 */
@Injectable()
export class InProcessNotifier extends Notifier {
  protected readonly logger = new Logger('InProcessNotifier');

  constructor(private readonly uow: UnitOfWork) {
    super();
  }

  async announce(n: EventNotification): Promise<void> {
    this.uow.afterCommit(() => this.emit((l) => l.onEvents(n)));
  }

  state(): NotifierState {
    return { kind: 'in_process', connected: true, degraded: false };
  }
}
