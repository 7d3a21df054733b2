import { Module } from '@nestjs/common';

/** Audit: see CONTRACT.md; filled in by its own issue. */
@Module({})
export class AuditModule {}
