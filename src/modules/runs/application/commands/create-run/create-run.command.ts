import { Command } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { ContentPart } from '../../../../agents/domain/model-provider';
import { ClientToolSpec, RunLimits, RunProps } from '../../../domain/run.aggregate';
import { InputDisposition, InputReceipt } from '../../../domain/input-receipt';

export type { InputDisposition, InputReceipt };

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
  /** A subagent's run (started by its parent run, CONTRACT 16): the parent it reports its end to. */
  parent?: { run_id: string; subagent_id: string };
}

/** The run that takes the input: a new one, or (`steered`) the session's active run; and the input's receipt. */
export interface CreateRunResult {
  run: Readonly<RunProps>;
  userMessageId: string;
  steered: boolean;
  /** The input answered the active run's `ask_user` (CONTRACT 17): that run continues with it. */
  answered?: boolean;
  /** The input's receipt as committed (CONTRACT section 7). */
  receipt: InputReceipt;
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
