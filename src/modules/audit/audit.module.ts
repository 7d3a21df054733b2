import { Global, Module } from '@nestjs/common';
import { AuditController } from './api/audit.controller';
import { ListAuditRecordsHandler } from './application/queries/list-audit-records/list-audit-records.handler';
import { VerifyAuditChainHandler } from './application/queries/verify-audit-chain/verify-audit-chain.handler';
import { AuditReader } from './domain/audit-reader';
import { AuditTrail } from './domain/audit-trail';
import { AuditTypeormReader } from './infrastructure/audit.typeorm-reader';
import { AuditTypeormTrail } from './infrastructure/audit.typeorm-trail';
import { RequestAuditHook } from './infrastructure/request-audit.hook';
import { RequestAuditWriter } from '../../common/audit/request-audit-writer';
import { AppConfig } from '../../common/config/app-config';
import { resolveAuditHmacKey } from '../../common/config/audit-hmac-key';
import { AuditChainKey } from './domain/audit-record';
import { AuditSigner } from './domain/audit-checkpoint';
import { resolveAuditSigningKey } from '../../common/config/audit-signing-key';
import { AuditTypeormCheckpointer } from './infrastructure/audit.typeorm-checkpointer';
import { AuditCheckpointer } from './domain/audit-checkpointer';
import { AuditRetention } from './domain/audit-retention';
import { AuditTypeormRetention } from './infrastructure/audit.typeorm-retention';
import { ExportAuditTrailHandler } from './application/queries/export-audit-trail/export-audit-trail.handler';
import { GetAuditKeysHandler } from './application/queries/get-audit-keys/get-audit-keys.handler';
import { GetAuditStatusHandler } from './application/queries/get-audit-status/get-audit-status.handler';
import { GetExportedAuditRecordHandler } from './application/queries/get-exported-audit-record/get-exported-audit-record.handler';
import { SetLegalHoldHandler } from './application/commands/set-legal-hold/set-legal-hold.handler';

/**
 * The tamper-evident audit trail (CONTRACT section 10). Global: any module may inject the
 * `AuditTrail` port; run events are queued for it by the `run_events_audit` trigger in the inserting statement.
 * State-changing requests are recorded by `RequestAuditHook` for every route. Records and chain
 * heads are keyed with `AuditChainKey` (HMAC-SHA256, AUDIT_HMAC_KEY).
 */
@Global()
@Module({
  controllers: [AuditController],
  providers: [
    // AUDIT_HMAC_KEY, or the key generated into DATA_DIR (audit-hmac-key.ts).
    { provide: AuditChainKey, inject: [AppConfig], useFactory: (config: AppConfig) => new AuditChainKey(resolveAuditHmacKey(config)) },
    // AUDIT_SIGNING_KEY, or the key generated into DATA_DIR (audit-signing-key.ts).
    { provide: AuditSigner, inject: [AppConfig], useFactory: (config: AppConfig) => new AuditSigner(resolveAuditSigningKey(config)) },
    AuditTypeormCheckpointer,
    { provide: AuditCheckpointer, useExisting: AuditTypeormCheckpointer },
    { provide: AuditTrail, useClass: AuditTypeormTrail },
    { provide: AuditReader, useClass: AuditTypeormReader },
    RequestAuditHook,
    { provide: RequestAuditWriter, useExisting: RequestAuditHook },
    AuditTypeormRetention,
    { provide: AuditRetention, useExisting: AuditTypeormRetention },
    ListAuditRecordsHandler,
    VerifyAuditChainHandler,
    ExportAuditTrailHandler,
    GetAuditKeysHandler,
    GetAuditStatusHandler,
    SetLegalHoldHandler,
    GetExportedAuditRecordHandler,
  ],
  exports: [AuditTrail, RequestAuditWriter],
})
export class AuditModule {}
