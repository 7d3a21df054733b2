import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn } from 'class-validator';
import { RUN_CONCURRENCY } from '../../domain/session.aggregate';
import { MayOmit } from '../../../../common/http/validation';

/** The optional `default_concurrency` of a session's create and update bodies. */
export function DefaultConcurrencyProperty(): PropertyDecorator {
  return applyDecorators(
    ApiPropertyOptional({
      enum: RUN_CONCURRENCY,
      default: 'steer',
      example: 'reject',
      description:
        'What a run that omits `concurrency` does while the session has an active run: reject (409 session_busy), enqueue (FIFO), steer (the input goes to the active run; what it did not take before it ended goes, in commit order, into one follow-up run) or interrupt (the active run is cancelled, then this one runs). Default `steer` for sessions created from this version on; sessions created before keep the value they have (then `reject`).',
    }),
    MayOmit(),
    IsIn(RUN_CONCURRENCY),
  );
}
