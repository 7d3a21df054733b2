import { Readable } from 'node:stream';
import { Body, Controller, Get, Put, Query, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiBearerAuth, ApiExtraModels, ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { SetLegalHoldCommand } from '../application/commands/set-legal-hold/set-legal-hold.command';
import { ExportAuditTrailQuery } from '../application/queries/export-audit-trail/export-audit-trail.query';
import { GetAuditKeysQuery } from '../application/queries/get-audit-keys/get-audit-keys.query';
import { GetAuditStatusQuery } from '../application/queries/get-audit-status/get-audit-status.query';
import { CSV_COLUMNS } from '../domain/audit-export';
import {
  AuditCheckpointDto,
  AuditPublicKeysResponseDto,
  AuditStatusResponseDto,
  ExportAuditRequestDto,
  LegalHoldRequestDto,
  LegalHoldResponseDto,
  toCheckpointDto,
  toLegalHoldDto,
  toPublicKeyDto,
} from './dto/audit-export.dto';
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
@ApiExtraModels(ChainBreakDto, AuditCheckpointDto)
@AdminOnly()
@Controller('v1/admin/audit')
export class AuditController {
  constructor(
    private readonly queries: QueryBus,
    private readonly commands: CommandBus,
  ) {}

  @Get()
  @ApiOperation({
    summary: "List the tenant's audit records",
    description:
      'Admin only, own tenant only. Every state-changing request (POST/PUT/PATCH/DELETE, failed ones included) and every run event, ' +
      'with actor, action, resource, request id, outcome and the unredacted data. Keyset pagination on `seq`; default order `desc` (newest first). ' +
      'Each record is chained: `hash` = hex SHA-256 of (`prev_hash` + canonical JSON of the record without `object`, `prev_hash`, `hash`, `mac`), ' +
      "anyone can recompute it; `mac` = hex HMAC-SHA256 of `hash` under the server's `AUDIT_HMAC_KEY` (checked by the service), and the chain head " +
      'is signed (Ed25519) every `AUDIT_CHECKPOINT_EVERY` records and `AUDIT_CHECKPOINT_MS`: see `/export` and `/public-key`.',
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
      'Admin only. Walks the chain from its start (seq 1, or after a prune the signed checkpoint it starts after) to the current head in bounded ' +
      'batches, recomputing every hash and mac (`AUDIT_HMAC_KEY`) and checking every signed checkpoint on the way (its hash is the record\'s, a listed ' +
      "key signed it), then that the last record is the head and the head's tag (an HMAC over tenant, position and last hash) is the key's. " +
      'Answers `{"ok":true,"checked":N}` or `{"ok":false,"checked":N,"first_broken":{"id","seq","reason"}}` naming the first record that fails: ' +
      '`hash_mismatch` (changed), `mac_mismatch` (changed and rehashed without the key), `prev_hash_mismatch`, `seq_gap` (`id` null: missing), ' +
      '`chain_head_mismatch` (the tail was removed and the head moved back, or the head was changed: `seq` is the head\'s position), ' +
      '`checkpoint_mismatch`, `checkpoint_signature_invalid`, `chain_start_unanchored`.',
  })
  @ApiOkResponse({
    type: AuditVerifyResponseDto,
    examples: {
      intact: { summary: 'The chain verifies', value: { ok: true, checked: 1250 } },
      tampered: {
        summary: 'A record was changed in the database (and the chain rehashed without the key)',
        value: { ok: false, checked: 16, first_broken: { id: 'aud_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B', seq: 17, reason: 'mac_mismatch' } },
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

  @Get('public-key')
  @ApiOperation({
    summary: 'The public keys that check the signed audit checkpoints',
    description:
      'Admin only. Every Ed25519 key that signed checkpoints (SPKI PEM, with its key id), the current one marked; after a rotation of ' +
      '`AUDIT_SIGNING_KEY` the old keys stay listed, so older checkpoints still verify. An auditor should take the key from here once, ' +
      'out of band of the export, and keep it: `agent-api audit verify --public-key key.pem`.',
  })
  @ApiOkResponse({ type: AuditPublicKeysResponseDto })
  @ApiErrors('forbidden')
  async publicKey(@CurrentPrincipal() principal: Principal): Promise<AuditPublicKeysResponseDto> {
    const { currentKeyId, keys } = await this.queries.execute(new GetAuditKeysQuery(principal));
    return { object: 'list', current_key_id: currentKeyId, data: keys.map((k) => toPublicKeyDto(k, currentKeyId)) };
  }

  @Get('export')
  @ApiOperation({
    summary: "Export the tenant's audit trail (streamed) with its hashes and signed checkpoints",
    description:
      'Admin only. Streams a contiguous part of the chain: from the first record with occurred_at >= `from` to the last with occurred_at < `to` ' +
      '(every record between them, so the part verifies as a chain), read in batches as the client reads (memory stays flat for any range). ' +
      'Without `to` the head is signed first, so the whole export is covered by a checkpoint.\n\n' +
      '`format=ndjson` (`application/x-ndjson`, the default), one JSON object per line with a `kind`: `header` (format, version, tenant_id, ' +
      'from_seq, to_seq, exported_at); `checkpoint` (tenant_id, seq, hash, at, key_id, algorithm, signature), first the one just before ' +
      'from_seq if there is one, then each after the record it signs; `record` (the 16 hashed fields, prev_hash, hash, mac, hash_alg); ' +
      'last `end` (records, checkpoints: a download cut off lacks it). Verify it offline with `agent-api audit verify --file F --public-key K` ' +
      'or the recipe of docs/audit.md ("Offline verification").\n\n' +
      `\`format=csv\` (\`text/csv\`): a header row, then one row per record or checkpoint, columns ${CSV_COLUMNS.map((c) => `\`${c}\``).join(', ')}; ` +
      'empty cells for null and for what the row kind has not, `data` as JSON, RFC 4180 quoting, CRLF. For SIEM import; verify the ndjson.',
  })
  @ApiProduces('application/x-ndjson', 'text/csv')
  @ApiOkResponse({
    description: 'The export, streamed.',
    content: {
      'application/x-ndjson': {
        schema: { type: 'string' },
        example:
          '{"kind":"header","format":"agent-api.audit-export","version":1,"tenant_id":"tenant_dev","from_seq":1,"to_seq":2,...}\n' +
          '{"kind":"record","id":"aud_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B","tenant_id":"tenant_dev","seq":1,...,"prev_hash":"000...0","hash":"9f86...","mac":"3b1f...","hash_alg":"sha256"}\n' +
          '{"kind":"record",...,"seq":2,...}\n' +
          '{"kind":"checkpoint","tenant_id":"tenant_dev","seq":2,"hash":"5d41...","at":"2025-01-01T12:00:00.000Z","key_id":"1f0e2d3c4b5a6978","algorithm":"ed25519","signature":"mP3b..."}\n' +
          '{"kind":"end","records":2,"checkpoints":1}\n',
      },
      'text/csv': { schema: { type: 'string' }, example: `${CSV_COLUMNS.join(',')}\r\nrecord,tenant_dev,1,aud_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B,...\r\n` },
    },
  })
  @ApiErrors('forbidden', 'invalid_request')
  async export(@CurrentPrincipal() principal: Principal, @Query() q: ExportAuditRequestDto, @Res() reply: FastifyReply): Promise<void> {
    const format = q.format ?? 'ndjson';
    const out = await this.queries.execute(
      new ExportAuditTrailQuery(principal, { from: q.from ? new Date(q.from) : undefined, to: q.to ? new Date(q.to) : undefined }, format),
    );
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    // highWaterMark 1: one batch ahead of the socket at most (Fastify pipes it, so a slow reader pauses the reads).
    void reply
      .status(200)
      .header('content-type', format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8')
      .header('content-disposition', `attachment; filename="audit-${principal.tenantId}-${stamp}.${format === 'csv' ? 'csv' : 'ndjson'}"`)
      .header('cache-control', 'no-store')
      .send(Readable.from(out.chunks, { highWaterMark: 1 }));
  }

  @Get('status')
  @ApiOperation({
    summary: "The state of the tenant's audit trail: latest signed checkpoint, stored range, retention, legal hold",
    description: 'Admin only. What the console\'s Audit page shows above the records.',
  })
  @ApiOkResponse({ type: AuditStatusResponseDto })
  @ApiErrors('forbidden')
  async status(@CurrentPrincipal() principal: Principal): Promise<AuditStatusResponseDto> {
    const s = await this.queries.execute(new GetAuditStatusQuery(principal));
    return {
      object: 'audit_status',
      latest_checkpoint: s.latestCheckpoint ? toCheckpointDto(s.latestCheckpoint) : null,
      first_seq: s.firstSeq,
      last_seq: s.lastSeq,
      retention_days: s.retentionDays,
      legal_hold: toLegalHoldDto(s.legalHold),
    };
  }

  @Get('legal_hold')
  @ApiOperation({ summary: "Whether the tenant's audit records are on legal hold", description: 'Admin only.' })
  @ApiOkResponse({ type: LegalHoldResponseDto })
  @ApiErrors('forbidden')
  async legalHold(@CurrentPrincipal() principal: Principal): Promise<LegalHoldResponseDto> {
    return toLegalHoldDto((await this.queries.execute(new GetAuditStatusQuery(principal))).legalHold);
  }

  @Put('legal_hold')
  @ApiOperation({
    summary: "Put the tenant's audit records on legal hold (or take them off)",
    description:
      'Admin only. `{"enabled":true}`: retention (`AUDIT_RETENTION_DAYS`) prunes nothing of this tenant until `{"enabled":false}`. ' +
      'Idempotent: the same value again changes nothing but the time and the subject. Recorded in the audit trail like every change.',
  })
  @ApiOkResponse({ type: LegalHoldResponseDto })
  @ApiErrors('forbidden', 'invalid_request')
  async setLegalHold(@CurrentPrincipal() principal: Principal, @Body() dto: LegalHoldRequestDto): Promise<LegalHoldResponseDto> {
    return toLegalHoldDto(await this.commands.execute(new SetLegalHoldCommand(principal, dto.enabled)));
  }
}
