import { createHash } from 'node:crypto';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { MessageRepository } from '../../../../sessions/domain/message.repository';
import { ApplyToRun } from '../../apply-to-run';
import { runNotFound } from '../../load-owned-run';
import { appendToolResults } from '../../tool-result-messages';
import { AnswerToolCallbackCommand } from './answer-tool-callback.command';

/**
 * A tool's result by callback: the decider's `callback_received` rule (expected? the token's
 * hash, compared in constant time, or an admin) through the one write path, with the call's
 * `tool` message in the same commit. Only the token's SHA-256 is ever stored or compared.
 */
@CommandHandler(AnswerToolCallbackCommand)
export class AnswerToolCallbackHandler implements ICommandHandler<AnswerToolCallbackCommand> {
  constructor(
    private readonly path: ApplyToRun,
    private readonly messages: MessageRepository,
  ) {}

  async execute({ runId, toolCallId, auth, answer }: AnswerToolCallbackCommand) {
    const admin = 'admin' in auth ? auth.admin : undefined;
    const tokenHash = 'token' in auth ? createHash('sha256').update(auth.token, 'utf8').digest('hex') : null;
    const applied = await this.path.apply(
      runId,
      { type: 'callback_received', tool_call_id: toolCallId, token_hash: tokenHash, admin: admin !== undefined, ...answer },
      { ...(admin ? { principal: admin } : {}), alsoWrite: (run, d) => appendToolResults(this.messages, run, d) },
    );
    if (!applied) throw runNotFound(runId);
    return applied.run.snapshot();
  }
}
