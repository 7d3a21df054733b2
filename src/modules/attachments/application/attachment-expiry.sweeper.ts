import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../../../common/config/app-config';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { ConcurrencyConflict } from '../../../common/errors/domain-error';
import { AttachmentRepository } from '../domain/attachment.repository';
import { BlobStore } from '../domain/blob-store';

const SWEEP_EVERY_MS = 60_000;
const BATCH = 100;
/** An upload still `uploading` after this long lost its request (client gone, node crashed). */
export const STALE_UPLOAD_MS = 60 * 60_000;

/**
 * Moves `ready` attachments past `expires_at` (ATTACHMENT_TTL_HOURS) to `expired` and drops their
 * content; marks uploads whose request died `failed` and drops their partial content. Safe on
 * several nodes: every move is conditional on the version it read.
 */
@Injectable()
export class AttachmentExpirySweeper implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('AttachmentExpirySweeper');
  private timer: NodeJS.Timeout | null = null;
  private current: Promise<unknown> | null = null;

  constructor(
    private readonly repo: AttachmentRepository,
    private readonly blobs: BlobStore,
    private readonly uow: UnitOfWork,
    private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.workerEnabled) return;
    this.timer = setInterval(() => {
      if (this.current) return;
      this.current = this.sweep()
        .catch((err) => this.logger.error(`sweep failed: ${(err as Error).message}`))
        .finally(() => (this.current = null));
    }, SWEEP_EVERY_MS);
    this.timer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.current;
  }

  async sweep(now: Date = new Date()): Promise<{ expired: number; failed: number }> {
    let expired = 0;
    let failed = 0;
    for (const id of await this.repo.findExpired(now, BATCH)) {
      if (await this.move(id, 'ready', (a) => a.expire(now))) expired++;
    }
    for (const id of await this.repo.findStaleUploads(new Date(now.getTime() - STALE_UPLOAD_MS), BATCH)) {
      if (await this.move(id, 'uploading', (a) => a.fail('upload_incomplete', now))) failed++;
    }
    return { expired, failed };
  }

  private async move(id: string, from: string, change: (a: import('../domain/attachment.aggregate').Attachment) => void): Promise<boolean> {
    try {
      return await this.uow.run(async () => {
        const a = await this.repo.findById(id);
        if (!a || a.status !== from) return false;
        change(a);
        await this.repo.save(a);
        await this.blobs.delete(a.storageKey);
        return true;
      });
    } catch (err) {
      if (err instanceof ConcurrencyConflict) return false;
      throw err;
    }
  }
}
