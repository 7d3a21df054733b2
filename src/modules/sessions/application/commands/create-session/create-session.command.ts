import type { RunConcurrency } from '../../../domain/session.aggregate';
import { Command } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { SessionProps, SessionTtl, SubagentParent } from '../../../domain/session.aggregate';

export class CreateSessionCommand extends Command<Readonly<SessionProps>> {
  constructor(
    readonly principal: Principal,
    readonly input: { agentId?: string; agent?: { model?: string; instructions?: string; tools?: unknown[]; handoffs?: string[]; subagents?: Record<string, unknown> }; title?: string | null; metadata?: Record<string, string>; defaultConcurrency?: RunConcurrency; ttl?: SessionTtl | null;
      /** A subagent's session (CONTRACT 16, created by a run's `create_subagent`): the agent version its parent pinned, and the parent. */
      agentVersion?: string;
      parent?: SubagentParent;
    },
  ) {
    super();
  }
}
