import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { CommandBus } from '@nestjs/cqrs';
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { AppConfig } from '../../../common/config/app-config';
import { routeOf } from '../../../common/http/route-path';
import { AnswerToolCallbackCommand } from '../application/commands/answer-tool-callback/answer-tool-callback.command';

const CALLBACK_ROUTE = '/v1/runs/:id/callbacks/:tool_call_id';

/**
 * A tool's callback whose body passes the cap (`BODY_MAX_BYTES`, 1 MiB by default) is refused
 * before any handler reads it (413 `payload_too_large` to the tool), and - when it carries its
 * `Callback-Token` - ends the call it answers as any answer over the cap does, whatever the
 * transport: `tool.failed` with code `too_large` (through the same command as a callback, so the
 * token is checked the same way; a wrong token or an ended call changes nothing). The run goes on
 * instead of waiting for `callback_timeout_ms`.
 */
@Injectable()
export class CallbackSizeHook implements OnModuleInit {
  private readonly logger = new Logger('Callbacks');

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly commands: CommandBus,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter?.getInstance<FastifyInstance>();
    if (!fastify) return;
    fastify.addHook('onError', async (req: FastifyRequest, _reply, err: FastifyError) => {
      if (err?.code !== 'FST_ERR_CTP_BODY_TOO_LARGE' || routeOf(req) !== CALLBACK_ROUTE) return;
      const token = req.headers['callback-token'];
      if (typeof token !== 'string' || token.length === 0) return;
      const { id, tool_call_id } = (req.params ?? {}) as { id?: string; tool_call_id?: string };
      if (!id || !tool_call_id) return;
      const message = `the callback's answer was larger than ${this.config.bodyMaxBytes} bytes`;
      await this.commands.execute(new AnswerToolCallbackCommand(id, tool_call_id, { token }, { error: { code: 'too_large', message } })).catch((e: unknown) => {
        // Not expected (answered already, a wrong token, the run ended): the 413 is all there is.
        this.logger.debug?.(`oversized callback for ${id}/${tool_call_id} not applied: ${(e as Error)?.message}`);
      });
    });
  }
}
