import { Body, Controller, Delete, Get, HttpCode, Param, Put, Query, Req, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { RouteConfig } from '@nestjs/platform-fastify';
import { ApiBearerAuth, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AUDIT_WITHHOLDS_BODY, noteAuditResult } from '../../../common/audit/audit-notes';
import { AdminOnly, CurrentPrincipal } from '../../../common/auth/auth.decorators';
import { Principal } from '../../../common/auth/principal';
import { ApiErrors } from '../../../common/errors/error.dto';
import { ApiIdempotencyKey, ApiJsonBody } from '../../../common/http/api-docs.decorators';
import { ListQueryDto } from '../../../common/http/pagination';
import { IdempotentExecutor } from '../../idempotency/application/idempotent-executor';
import { canonicalJson } from '../../idempotency/domain/fingerprint';
import { DeleteSecretCommand } from '../application/commands/delete-secret/delete-secret.command';
import { PutSecretCommand } from '../application/commands/put-secret/put-secret.command';
import { GetSecretQuery } from '../application/queries/get-secret/get-secret.query';
import { ListSecretsQuery } from '../application/queries/list-secrets/list-secrets.query';
import { SecretCipher } from '../domain/secret-cipher';
import { PutSecretRequestDto, SecretListResponseDto, SecretResponseDto, toSecretList, toSecretResponse } from './dto/secret.dto';

const NAME_PARAM = {
  name: 'name',
  example: 'CRM_API_TOKEN',
  description: '`[A-Z][A-Z0-9_]{0,63}` (else 400 `invalid_request`, field `name`). Names are per tenant: another tenant\'s secret of the same name is another secret.',
  schema: { type: 'string', pattern: '^[A-Z][A-Z0-9_]{0,63}$', example: 'CRM_API_TOKEN' },
};

const NEVER_SHOWN =
  'The value is write-only: no route returns it, and it is never written to a log, event, audit record (the request body of a PUT is not recorded) or ' +
  'idempotency record (the replay fingerprint is a keyed HMAC, not a hash of the value).';

@ApiTags('Admin: secrets')
@ApiBearerAuth('api-key')
@AdminOnly()
@Controller('v1/secrets')
export class SecretsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    private readonly idempotent: IdempotentExecutor,
    private readonly cipher: SecretCipher,
  ) {}

  @Put(':name')
  @RouteConfig(AUDIT_WITHHOLDS_BODY)
  @ApiOperation({
    summary: 'Set or rotate a secret',
    description:
      "Admin only. Sets the tenant's secret `name` (version 1), or rotates it (the next version); http and mcp tool headers name it as `${secret:NAME}` " +
      `and get the current version's value at call time. Stored encrypted (AES-256-GCM under SECRETS_KEY). ${NEVER_SHOWN}`,
  })
  @ApiParam(NAME_PARAM)
  @ApiIdempotencyKey(false)
  @ApiJsonBody(PutSecretRequestDto, { token: { summary: 'An API token for an http tool', value: { value: 'crm-token-3f9a1c7e2b' } } })
  @ApiOkResponse({ type: SecretResponseDto })
  @ApiErrors('forbidden', 'invalid_request')
  async put(
    @CurrentPrincipal() p: Principal,
    @Param('name') name: string,
    @Body() dto: PutSecretRequestDto,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    await this.idempotent.execute(req, reply, { fingerprint: this.cipher.fingerprint(canonicalJson(req.body ?? {})) }, async () => {
      const s = await this.commands.execute(new PutSecretCommand(p, name, dto.value));
      noteAuditResult(req, { name: s.name, version: s.version });
      return { status: 200, body: toSecretResponse(s) };
    });
  }

  @Get()
  @ApiOperation({
    summary: "List the tenant's secrets",
    description: 'Admin only, own tenant only: names and versions, never values. Ordered by name (`order`, default `asc`); `after` is a name (the `last_id` of the previous page).',
  })
  @ApiOkResponse({ type: SecretListResponseDto })
  @ApiErrors('forbidden', 'invalid_request', 'invalid_cursor')
  async list(@CurrentPrincipal() p: Principal, @Query() q: ListQueryDto): Promise<SecretListResponseDto> {
    const { items, hasMore } = await this.queries.execute(new ListSecretsQuery(p, { after: q.after, limit: q.limit ?? 20, order: q.order ?? 'asc' }));
    return toSecretList(items, hasMore);
  }

  @Get(':name')
  @ApiOperation({ summary: "A secret's name and version", description: `Admin only. ${NEVER_SHOWN}` })
  @ApiParam(NAME_PARAM)
  @ApiOkResponse({ type: SecretResponseDto })
  @ApiErrors('forbidden', 'invalid_request', 'secret_not_found')
  async get(@CurrentPrincipal() p: Principal, @Param('name') name: string): Promise<SecretResponseDto> {
    return toSecretResponse(await this.queries.execute(new GetSecretQuery(p, name)));
  }

  @Delete(':name')
  @HttpCode(204)
  @ApiOperation({
    summary: 'Delete a secret',
    description: 'Admin only. The value is erased; tools that name it fail from then on (until it is set again, as the next version).',
  })
  @ApiParam(NAME_PARAM)
  @ApiIdempotencyKey(false)
  @ApiNoContentResponse()
  @ApiErrors('forbidden', 'invalid_request', 'secret_not_found')
  async remove(@CurrentPrincipal() p: Principal, @Param('name') name: string, @Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    await this.idempotent.execute(req, reply, {}, async () => {
      const { version } = await this.commands.execute(new DeleteSecretCommand(p, name));
      noteAuditResult(req, { name, version });
      return { status: 204, body: undefined };
    });
  }
}
