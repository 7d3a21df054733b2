import { Injectable } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { Principal } from '../../../common/auth/principal';
import { EventStore } from '../../events/domain/run-event';
import { MessageRepository } from '../../sessions/domain/message.repository';
import { RunResponseDto, toRunResponse } from '../api/dto/run.response.dto';
import { RunProps } from '../domain/run.aggregate';
import { isTerminal, isWaiting } from '../domain/run-status';
import { GetRunViewQuery } from './queries/get-run-view/get-run-view.query';
import { ToolArgumentsRedactor } from './tool-arguments-redactor';

/** Builds the public Run resource (with its last event sequence) and waits for sync runs. */
@Injectable()
export class RunViews {
  constructor(
    private readonly queries: QueryBus,
    private readonly events: EventStore,
    private readonly messages: MessageRepository,
    private readonly redactor: ToolArgumentsRedactor,
  ) {}

  async toView(principal: Principal, run: Readonly<RunProps>): Promise<RunResponseDto> {
    return (await this.toViews(principal, [run]))[0];
  }

  /** A page of runs: their last sequences come from one read, not one per run. */
  async toViews(principal: Principal, runs: ReadonlyArray<Readonly<RunProps>>): Promise<RunResponseDto[]> {
    const last = await this.events.lastSequences(runs.map((r) => r.id));
    return runs.map((r) => this.render(principal, r, last.get(r.id) ?? 0));
  }

  /** One read: the run and its last sequence together (GET /v1/runs/{id}, the sync wait). */
  async get(principal: Principal, runId: string): Promise<RunResponseDto> {
    const { run, lastSequence } = await this.queries.execute(new GetRunViewQuery(principal, runId));
    return this.render(principal, run, lastSequence);
  }

  private render(principal: Principal, run: Readonly<RunProps>, lastSequence: number): RunResponseDto {
    return toRunResponse(run, lastSequence, (tool, args) => this.redactor.redact(principal, tool, args));
  }

  /** Polls until the run is terminal or waiting, at most `waitMs`. */
  async waitForSettled(principal: Principal, runId: string, waitMs: number): Promise<{ settled: boolean; view: RunResponseDto }> {
    const until = Date.now() + waitMs;
    let delay = 20;
    for (;;) {
      const { run, lastSequence } = await this.queries.execute(new GetRunViewQuery(principal, runId));
      const settled = isTerminal(run.status) || isWaiting(run.status);
      if (settled || Date.now() >= until) {
        const view = this.render(principal, run, lastSequence);
        if (settled) {
          const final = run.finalMessageId ? await this.messages.findById(run.finalMessageId) : null;
          view.output_text = final
            ? final.content
                .filter((p) => p.type === 'text')
                .map((p) => (p as { text: string }).text)
                .join('')
            : null;
        }
        return { settled, view };
      }
      await new Promise((r) => setTimeout(r, Math.min(delay, until - Date.now())));
      delay = Math.min(delay * 2, 250);
    }
  }
}
