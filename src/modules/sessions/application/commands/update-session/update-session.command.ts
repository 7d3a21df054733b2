import type { RunConcurrency } from '../../../domain/session.aggregate';
import { Command } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { SessionProps, SessionTtl } from '../../../domain/session.aggregate';

export class UpdateSessionCommand extends Command<Readonly<SessionProps>> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
    readonly changes: { title?: string | null; metadata?: Record<string, string>; model?: string; defaultConcurrency?: RunConcurrency; ttl?: SessionTtl | null },
    readonly expectedRevision?: number,
  ) {
    super();
  }
}
