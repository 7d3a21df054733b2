import type { RunConcurrency } from '../../../domain/session.aggregate';
import { Command } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { SessionProps, SessionTtl } from '../../../domain/session.aggregate';

export class CreateSessionCommand extends Command<Readonly<SessionProps>> {
  constructor(
    readonly principal: Principal,
    readonly input: { agentId?: string; agent?: { model?: string; instructions?: string; tools?: unknown[]; handoffs?: string[] }; title?: string | null; metadata?: Record<string, string>; defaultConcurrency?: RunConcurrency; ttl?: SessionTtl | null },
  ) {
    super();
  }
}
