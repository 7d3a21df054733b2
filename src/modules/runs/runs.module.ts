import { Module } from '@nestjs/common';

/** Runs: see CONTRACT.md; filled in by its own issue. */
@Module({})
export class RunsModule {}
