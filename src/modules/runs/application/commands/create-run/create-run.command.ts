import { Command } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { ContentPart } from '../../../../agents/domain/model-provider';
import { RunLimits, RunProps } from '../../../domain/run.aggregate';

export interface CreateRunInput {
  content: ContentPart[];
  concurrency: 'reject' | 'enqueue';
  expectedRevision?: number;
  limits?: Partial<RunLimits>;
  metadata?: Record<string, string>;
  model?: string;
}

export class CreateRunCommand extends Command<Readonly<RunProps>> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
    readonly input: CreateRunInput,
  ) {
    super();
  }
}
