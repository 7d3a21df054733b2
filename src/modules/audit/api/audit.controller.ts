import { Controller, Get, Query } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { ApiBearerAuth, ApiExtraModels, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminOnly, CurrentPrincipal } from '../../../common/auth/auth.decorators';
import { Principal } from '../../../common/auth/principal';
import { ApiErrors } from '../../../common/errors/error.dto';
import { listPage } from '../../../common/http/pagination';
import { ListAuditRecordsQuery } from '../application/queries/list-audit-records/list-audit-records.query';
import { VerifyAuditChainQuery } from '../application/queries/verify-audit-chain/verify-audit-chain.query';
import {
  AuditRecordListResponseDto,
  AuditVerifyResponseDto,
  ChainBreakDto,
  toAuditRecordResponse,
} from './dto/audit-record.response.dto';
import { ListAuditRequestDto } from './dto/list-audit.request.dto';

@ApiTags('Admin: audit')
@ApiBearerAuth('api-key')
@ApiExtraModels(ChainBreakDto)
@AdminOnly()
@Controller('v1/admin/audit')
export class AuditController {
  constructor(private readonly queries: QueryBus) {}

  @Get()
  @ApiOperation({
    summary: "List the tenant's audit records",
    description:
      'Admin only, own tenant only. Every state-changing request (POST/PUT/PATCH/DELETE, failed ones included) and every run event, ' +
      'with actor, action, resource, request id, outcome and the unredacted data. Keyset pagination on `seq`; default order `desc` (newest first). ' +
      'Each record is chained: `hash` = hex HMAC-SHA256, keyed with the server\'s `AUDIT_HMAC_KEY`, of (`prev_hash` + canonical JSON of the record ' +
      'without `object`, `prev_hash`, `hash`); records written before the chain was keyed keep their hex SHA-256 of the same bytes. ' +
      'Whoever holds the key can verify a chain from these records alone; nobody without it can rewrite one so that it verifies.',
  })
  @ApiOkResponse({ type: AuditRecordListResponseDto })
  @ApiErrors('forbidden', 'invalid_request', 'invalid_cursor')
  async list(@CurrentPrincipal() principal: Principal, @Query() q: ListAuditRequestDto): Promise<AuditRecordListResponseDto> {
    const { items, hasMore } = await this.queries.execute(
      new ListAuditRecordsQuery(
        principal,
        {
          sessionId: q.session_id,
          runId: q.run_id,
          actor: q.actor,
          action: q.action,
          resourceId: q.resource_id,
          from: q.from ? new Date(q.from) : undefined,
          to: q.to ? new Date(q.to) : undefined,
        },
        { after: q.after, limit: q.limit ?? 20, order: q.order ?? 'desc' },
      ),
    );
    return listPage(items.map(toAuditRecordResponse), hasMore);
  }

  @Get('verify')
  @ApiOperation({
    summary: "Verify the tenant's audit hash chain",
    description:
      'Admin only. Walks the chain from seq 1 to the current head in bounded batches, recomputing every keyed hash (HMAC-SHA256 with ' +
      '`AUDIT_HMAC_KEY`; SHA-256 for records from before the chain was keyed), then checks that the last record is the head and that the ' +
      "head's tag (an HMAC over tenant, position and last hash) is the key's. Answers `{\"ok\":true,\"checked\":N}` or " +
      '`{"ok":false,"checked":N,"first_broken":{"id","seq","reason"}}` naming the first record that fails: `hash_mismatch` (changed, or ' +
      'rehashed without the key), `prev_hash_mismatch`, `seq_gap` (`id` null: missing), `chain_head_mismatch` (the tail was removed and ' +
      'the head moved back, or the head was changed: `seq` is the head\'s position).',
  })
  @ApiOkResponse({
    type: AuditVerifyResponseDto,
    examples: {
      intact: { summary: 'The chain verifies', value: { ok: true, checked: 1250 } },
      tampered: {
        summary: 'A record was changed in the database (and the chain rehashed without the key)',
        value: { ok: false, checked: 16, first_broken: { id: 'aud_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B', seq: 17, reason: 'hash_mismatch' } },
      },
      truncated: {
        summary: 'The last records were deleted and the head moved back',
        value: { ok: false, checked: 1249, first_broken: { id: 'aud_01JD2Z4Q8M3K7P6W9X0Y1Z2A3C', seq: 1249, reason: 'chain_head_mismatch' } },
      },
    },
  })
  @ApiErrors('forbidden')
  async verify(@CurrentPrincipal() principal: Principal): Promise<AuditVerifyResponseDto> {
    const result = await this.queries.execute(new VerifyAuditChainQuery(principal));
    return result.ok ? { ok: true, checked: result.checked } : { ok: false, checked: result.checked, first_broken: result.firstBroken };
  }
}
