import { Command } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { RunProps } from '../../../domain/run.aggregate';

/**
 * `POST /runs/{id}/callbacks/{tool_call_id}` (CONTRACT 17): the result of a tool that answered
 * `202 {"callback": true}`, authorised by its `Callback-Token` (`token`) or by an admin key
 * (`admin`, whose tenant must own the run).
 */
export class AnswerToolCallbackCommand extends Command<Readonly<RunProps>> {
  constructor(
    readonly runId: string,
    readonly toolCallId: string,
    readonly auth: { token: string } | { admin: Principal },
    readonly answer: { output?: unknown; error?: { code?: string; message: string } },
  ) {
    super();
  }
}
