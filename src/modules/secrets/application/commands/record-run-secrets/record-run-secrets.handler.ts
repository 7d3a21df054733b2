import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { AppConfig } from '../../../../../common/config/app-config';
import { SecretCipher } from '../../../domain/secret-cipher';
import { SecretRepository } from '../../../domain/secret.repository';
import { RecordRunSecretsCommand } from './record-run-secrets.command';

/** How often a node forgets uses older than the events' retention (they scrub nothing any more). */
const PRUNE_EVERY_MS = 60 * 60_000;

@CommandHandler(RecordRunSecretsCommand)
export class RecordRunSecretsHandler implements ICommandHandler<RecordRunSecretsCommand> {
  private lastPrune = 0;

  constructor(
    private readonly repo: SecretRepository,
    private readonly cipher: SecretCipher,
    private readonly config: AppConfig,
  ) {}

  async execute({ tenantId, runId, sessionId, values }: RecordRunSecretsCommand): Promise<void> {
    const uses = values
      .filter((v) => v.value.length > 0)
      .map((v) => ({ name: v.name, valueKey: this.cipher.useKey(v.name, v.value), ciphertext: this.cipher.sealUse(tenantId, runId, v.name, v.value) }));
    await this.repo.recordUses(tenantId, { runId, sessionId }, uses);
    const now = Date.now();
    if (now - this.lastPrune > PRUNE_EVERY_MS) {
      this.lastPrune = now;
      // A run's uses are kept as long as its events: past that nothing of the run is read again.
      await this.repo.pruneUses(new Date(now - this.config.eventRetentionDays * 86_400_000)).catch(() => undefined);
    }
  }
}
