import { Command } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { RunProps } from '../../../domain/run.aggregate';

export interface ToolOutputInput {
  tool_call_id: string;
  output?: unknown;
  error?: { code?: string; message: string };
}

export class SubmitToolOutputsCommand extends Command<Readonly<RunProps>> {
  constructor(
    readonly principal: Principal,
    readonly runId: string,
    readonly outputs: ToolOutputInput[],
  ) {
    super();
  }
}
