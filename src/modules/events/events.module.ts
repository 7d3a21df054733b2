import { Module } from '@nestjs/common';

/** Events: see CONTRACT.md; filled in by its own issue. */
@Module({})
export class EventsModule {}
