import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../../../common/config/app-config';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { ConcurrencyConflict } from '../../../common/errors/domain-error';
import { AttachmentRepository } from '../domain/attachment.repository';
import { BlobIntegrityError, BlobStore } from '../domain/blob-store';
import { Scanner, ScanVerdict } from '../domain/scanner';

const POLL_MS = 500;
/** A scan that takes longer than this is presumed dead and another node takes it over. */
const SCAN_LEASE_MS = 60_000;
/** After this many claims without a verdict the attachment is rejected with `scan_failed`. */
const MAX_SCAN_ATTEMPTS = 5;

/**
 * Scans `scanning` attachments in the background, on every node. Work is claimed with a lease
 * (`FOR UPDATE SKIP LOCKED`), so several nodes never scan the same attachment at once and a scan
 * interrupted by a crash is picked up again once its lease has passed.
 */
@Injectable()
export class AttachmentScanWorker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('AttachmentScanWorker');
  private running = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private kicked = false;

  constructor(
    private readonly repo: AttachmentRepository,
    private readonly blobs: BlobStore,
    private readonly scanner: Scanner,
    private readonly uow: UnitOfWork,
    private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.workerEnabled) this.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** New work is waiting (an upload on this node committed): look now rather than at the next poll. */
  kick(): void {
    this.kicked = true;
    this.wake?.();
  }

  /** Scans until nothing is left to claim; returns how many were processed (tests, tools). */
  async drain(): Promise<number> {
    let n = 0;
    while (await this.scanNext()) n++;
    return n;
  }

  private async run(): Promise<void> {
    while (this.running) {
      let worked = false;
      try {
        worked = await this.scanNext();
      } catch (err) {
        this.logger.error(`scan failed: ${(err as Error).message}`);
      }
      if (!worked && this.running) await this.idle();
    }
  }

  private idle(): Promise<void> {
    if (this.kicked) {
      this.kicked = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(done, POLL_MS);
      timer.unref();
      const self = this;
      function done() {
        clearTimeout(timer);
        self.wake = null;
        self.kicked = false;
        resolve();
      }
      this.wake = done;
    });
  }

  /** Claims and scans one attachment. False when there was nothing to do. */
  async scanNext(): Promise<boolean> {
    const claim = await this.repo.claimForScan(SCAN_LEASE_MS);
    if (!claim) return false;
    const attachment = await this.repo.findById(claim.id);
    if (!attachment || attachment.status !== 'scanning') return true;
    const s = attachment.snapshot();

    let verdict: ScanVerdict;
    if (claim.attempts > MAX_SCAN_ATTEMPTS) {
      verdict = { verdict: 'rejected', reason: 'scan_failed', detail: `no verdict after ${MAX_SCAN_ATTEMPTS} attempts`, mediaType: null };
    } else {
      try {
        verdict = await this.scanner.scan({
          filename: s.filename,
          declaredType: s.declaredType,
          sizeBytes: s.sizeBytes,
          content: this.blobs.read(s.storageKey, { sizeBytes: s.sizeBytes, sha256: s.sha256 ?? '' }),
        });
      } catch (err) {
        if (!(err instanceof BlobIntegrityError)) {
          // Transient (database, scanner engine): the lease runs out and the scan is retried.
          this.logger.warn(`scan of ${s.id} failed, will retry: ${(err as Error).message}`);
          return true;
        }
        verdict = { verdict: 'rejected', reason: 'integrity_error', detail: err.message, mediaType: null };
      }
    }

    try {
      await this.uow.run(async () => {
        const now = new Date();
        if (verdict.verdict === 'clean') {
          attachment.markReady(verdict.mediaType, now);
        } else {
          attachment.reject(verdict.reason, verdict.mediaType, now);
          // Rejected content is never served: do not keep it.
          await this.blobs.delete(s.storageKey);
        }
        await this.repo.save(attachment);
      });
      if (verdict.verdict === 'rejected') this.logger.log(`attachment ${s.id} rejected: ${verdict.reason} (${verdict.detail})`);
    } catch (err) {
      if (!(err instanceof ConcurrencyConflict)) throw err;
    }
    return true;
  }
}
