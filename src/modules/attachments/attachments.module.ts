import { Module } from '@nestjs/common';

/** Attachments: see CONTRACT.md; filled in by its own issue. */
@Module({})
export class AttachmentsModule {}
