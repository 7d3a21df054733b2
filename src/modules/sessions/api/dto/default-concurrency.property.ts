import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional } from 'class-validator';
import { RUN_CONCURRENCY } from '../../domain/session.aggregate';

/** The optional `default_concurrency` of a session's create and update bodies. */
export function DefaultConcurrencyProperty(): PropertyDecorator {
  return applyDecorators(
    ApiPropertyOptional({
      enum: RUN_CONCURRENCY,
      default: 'reject',
      example: 'steer',
      description:
        'What a run that omits `concurrency` does while the session has an active run: reject (409 session_busy), enqueue (FIFO), steer (the input goes to the active run) or interrupt (the active run is cancelled, then this one runs).',
    }),
    IsOptional(),
    IsIn(RUN_CONCURRENCY),
  );
}
