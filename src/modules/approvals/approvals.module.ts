import { Module } from '@nestjs/common';

/** Approvals: see CONTRACT.md; filled in by its own issue. */
@Module({})
export class ApprovalsModule {}
