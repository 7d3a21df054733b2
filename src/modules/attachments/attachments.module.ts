import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AttachmentReader } from '../agents/domain/tool';
import { AttachmentsController } from './api/attachments.controller';
import { AttachmentExpirySweeper } from './application/attachment-expiry.sweeper';
import { AttachmentReferenceChecker } from './application/attachment-reference.checker';
import { AttachmentScanWorker } from './application/attachment-scan.worker';
import { AttachmentUploads } from './application/attachment-uploads.service';
import { AttachmentBlobReader } from './application/attachment.reader';
import { DeleteAttachmentHandler } from './application/commands/delete-attachment/delete-attachment.handler';
import { GetAttachmentContentHandler } from './application/queries/get-attachment-content/get-attachment-content.handler';
import { GetAttachmentHandler } from './application/queries/get-attachment/get-attachment.handler';
import { AttachmentRepository } from './domain/attachment.repository';
import { BlobStore } from './domain/blob-store';
import { Scanner } from './domain/scanner';
import { AttachmentOrmEntity } from './infrastructure/attachment.orm-entity';
import { AttachmentTypeormRepository } from './infrastructure/attachment.typeorm-repository';
import { ContentScanner } from './infrastructure/content.scanner';
import { DatabaseBlobStore } from './infrastructure/database.blob-store';

/**
 * Attachments (CONTRACT section 11): upload, background scan, download, expiry. Global: other
 * modules inject `AttachmentReader` (read_attachment, model input) and
 * `AttachmentReferenceChecker` (validating `attachment_ref` input parts).
 */
@Global()
@Module({
  imports: [TypeOrmModule.forFeature([AttachmentOrmEntity])],
  controllers: [AttachmentsController],
  providers: [
    { provide: AttachmentRepository, useClass: AttachmentTypeormRepository },
    { provide: BlobStore, useClass: DatabaseBlobStore },
    { provide: Scanner, useClass: ContentScanner },
    { provide: AttachmentReader, useClass: AttachmentBlobReader },
    AttachmentReferenceChecker,
    AttachmentUploads,
    AttachmentScanWorker,
    AttachmentExpirySweeper,
    GetAttachmentHandler,
    GetAttachmentContentHandler,
    DeleteAttachmentHandler,
  ],
  exports: [AttachmentReader, AttachmentReferenceChecker],
})
export class AttachmentsModule {}
