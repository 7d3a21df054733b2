import { Global, Module } from '@nestjs/common';
import { IdempotencyPurger } from './application/idempotency-purger';
import { IdempotentExecutor } from './application/idempotent-executor';
import { IdempotencyStore } from './domain/idempotency.store';
import { IdempotencyTypeormStore } from './infrastructure/idempotency.typeorm-store';

/** Idempotency keys for POSTs (CONTRACT section 3); every module's controllers use the executor. */
@Global()
@Module({
  providers: [{ provide: IdempotencyStore, useClass: IdempotencyTypeormStore }, IdempotentExecutor, IdempotencyPurger],
  exports: [IdempotentExecutor, IdempotencyStore, IdempotencyPurger],
})
export class IdempotencyModule {}
