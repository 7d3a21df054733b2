import { Module } from '@nestjs/common';
import { UsageController } from './api/usage.controller';
import { DeleteSpendLimitHandler, PutSpendLimitHandler } from './application/commands/spend-limit-commands';
import { GetSpendLimitHandler, GetUsageHandler } from './application/queries/usage-queries';
import { SpendService } from './application/spend.service';
import { SpendGate } from './domain/spend';
import { SpendRider } from './domain/spend-rider';
import { SpendRepository } from './domain/spend.repository';
import { SpendRiderSql } from './infrastructure/spend-rider.sql';
import { SpendTypeormRepository } from './infrastructure/spend.typeorm-repository';

/**
 * Usage and money (CONTRACT section 18): what each model call cost (`model_spend`), tenant spend
 * limits and the admin usage report. A run step's statement writes its calls' spend through `SpendRider` and new runs pass
 * `SpendGate`; nobody else reads these tables.
 */
@Module({
  controllers: [UsageController],
  providers: [
    { provide: SpendRepository, useClass: SpendTypeormRepository },
    SpendService,
    { provide: SpendRider, useClass: SpendRiderSql },
    { provide: SpendGate, useExisting: SpendService },
    PutSpendLimitHandler,
    DeleteSpendLimitHandler,
    GetSpendLimitHandler,
    GetUsageHandler,
  ],
  exports: [SpendRider, SpendGate],
})
export class UsageModule {}
