import { Command } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { ContentPart } from '../../../../agents/domain/model-provider';
import { ClientToolSpec, RunLimits, RunProps } from '../../../domain/run.aggregate';

export interface CreateRunInput {
  content: ContentPart[];
  /** Omitted: the session's `default_concurrency`. */
  concurrency?: 'reject' | 'enqueue' | 'steer' | 'interrupt';
  expectedRevision?: number;
  limits?: Partial<RunLimits>;
  metadata?: Record<string, string>;
  model?: string;
  /** Client tools of this run only (besides the agent's); not with `steer`/`interrupt` (the input joins another run). */
  clientTools?: ClientToolSpec[];
}

/** The run that takes the input: a new one, or (`steered`) the session's active run. */
export interface CreateRunResult {
  run: Readonly<RunProps>;
  userMessageId: string;
  steered: boolean;
}

export class CreateRunCommand extends Command<CreateRunResult> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
    readonly input: CreateRunInput,
  ) {
    super();
  }
}
