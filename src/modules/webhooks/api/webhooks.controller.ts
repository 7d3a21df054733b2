import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiBearerAuth, ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AdminOnly, CurrentPrincipal } from '../../../common/auth/auth.decorators';
import { Principal } from '../../../common/auth/principal';
import { invalidRequest } from '../../../common/errors/domain-error';
import { ApiErrors } from '../../../common/errors/error.dto';
import { ApiIdempotencyKey, ApiJsonBody } from '../../../common/http/api-docs.decorators';
import { ListQueryDto, listPage } from '../../../common/http/pagination';
import { IdempotentExecutor, SecretInResponse } from '../../idempotency/application/idempotent-executor';
import { CreateWebhookCommand } from '../application/commands/create-webhook/create-webhook.command';
import { DeleteWebhookCommand } from '../application/commands/delete-webhook/delete-webhook.command';
import { RotateWebhookSecretCommand } from '../application/commands/rotate-webhook-secret/rotate-webhook-secret.command';
import { UpdateWebhookCommand } from '../application/commands/update-webhook/update-webhook.command';
import { GetWebhookQuery } from '../application/queries/get-webhook/get-webhook.query';
import { GetWebhookSecretQuery } from '../application/queries/get-webhook-secret/get-webhook-secret.query';
import { ListWebhookDeliveriesQuery } from '../application/queries/list-webhook-deliveries/list-webhook-deliveries.query';
import { ListWebhooksQuery } from '../application/queries/list-webhooks/list-webhooks.query';
import type { WebhookEndpoint } from '../domain/webhook-events';
import {
  CreateWebhookRequestDto,
  toDeliveryResponse,
  toWebhookResponse,
  UPDATE_WEBHOOK_FIELDS,
  UpdateWebhookRequestDto,
  WebhookDeliveryListResponseDto,
  WebhookListResponseDto,
  WebhookResponseDto,
  WebhookWithSecretResponseDto,
} from './dto/webhook.dto';

const SIGNING =
  'Each delivery is a POST of `{"id":"whevt_...","type","created_at","tenant_id","data":{"object": <the Run or Attachment as GET returns it to an admin, read at the attempt>}}`, ' +
  'signed per Standard Webhooks: headers `webhook-id` (the same on every attempt: deduplicate by it), `webhook-timestamp` (Unix seconds) and ' +
  '`webhook-signature: v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}" keyed with the base64-decoded secret>`. A non-2xx answer or none within 10 s is retried ' +
  'with exponential backoff and jitter (about WEBHOOK_RETRY_BASE_MS, doubling, at most 1 h apart) for 24 h, then the delivery is `failed`. Order is not guaranteed.';

const SECRET_REPLAY =
  'A retry with the same Idempotency-Key replays the stored answer, secret included, byte-for-byte - but the secret is not stored with the key: ' +
  'the replay opens the endpoint\'s sealed secret, and only if it is still the one this answer showed. If the secret was rotated since (or the ' +
  'endpoint deleted), the replay is the stored answer with `secret: null` and header `Idempotent-Secret-Withheld: rotated` (or `deleted`): ' +
  'never a different secret; rotate the secret to get a usable one.';

const SECRET_REPLAY_HEADERS = {
  'Idempotent-Replayed': { description: '`true` on a replay of the stored answer (same Idempotency-Key).', schema: { type: 'string', enum: ['true'] } },
  'Idempotent-Secret-Withheld': {
    description: 'On a replay only, when `secret` is null: `rotated` (the secret was rotated since the first answer) or `deleted` (the endpoint was deleted since).',
    schema: { type: 'string', enum: ['rotated', 'deleted'] },
  },
};

/** A create or rotate answer: the record keeps the secret's endpoint and version, never the secret. */
function secretRef(endpoint: WebhookEndpoint) {
  return { webhook_id: endpoint.id, secret_version: endpoint.secretVersion };
}

@ApiTags('Admin: webhooks')
@ApiBearerAuth('api-key')
@AdminOnly()
@Controller('v1/webhooks')
export class WebhooksController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    private readonly idempotent: IdempotentExecutor,
  ) {}

  @Post()
  @ApiOperation({
    summary: 'Create a webhook endpoint',
    description: `Admin only. The tenant's runs and attachments notify \`url\` of the subscribed \`events\`. The answer holds the signing \`secret\`, shown only here (and by rotate_secret). ${SECRET_REPLAY} ${SIGNING}`,
  })
  @ApiIdempotencyKey(false)
  @ApiJsonBody(CreateWebhookRequestDto, {
    runs: {
      summary: 'Finished runs and runs that need a human',
      value: { url: 'http://localhost:8080/webhooks', events: ['run.completed', 'run.failed', 'run.requires_action'], description: 'support desk' },
    },
  })
  @ApiCreatedResponse({ type: WebhookWithSecretResponseDto, headers: SECRET_REPLAY_HEADERS })
  @ApiErrors('forbidden', 'invalid_request')
  async create(@CurrentPrincipal() p: Principal, @Body() dto: CreateWebhookRequestDto, @Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    await this.idempotent.execute(req, reply, { secret: this.secretOf(p) }, async () => {
      const { endpoint, secret } = await this.commands.execute(new CreateWebhookCommand(p, dto.url, dto.events, dto.description ?? null));
      const body: WebhookWithSecretResponseDto = { ...toWebhookResponse(endpoint), secret };
      return { status: 201, body, secretRef: secretRef(endpoint) };
    });
  }

  @Get()
  @ApiOperation({ summary: "List the tenant's webhook endpoints", description: 'Admin only, own tenant only; ordered by id (`order` asc by default, or desc).' })
  @ApiOkResponse({ type: WebhookListResponseDto })
  @ApiErrors('forbidden', 'invalid_request')
  async list(@CurrentPrincipal() p: Principal, @Query() q: ListQueryDto): Promise<WebhookListResponseDto> {
    const { items, hasMore } = await this.queries.execute(new ListWebhooksQuery(p, { after: q.after, limit: q.limit ?? 20, order: q.order ?? 'asc' }));
    return listPage(items.map(toWebhookResponse), hasMore);
  }

  @Get(':id')
  @ApiOperation({ summary: 'Get a webhook endpoint' })
  @ApiOkResponse({ type: WebhookResponseDto })
  @ApiErrors('forbidden', 'webhook_not_found')
  async get(@CurrentPrincipal() p: Principal, @Param('id') id: string): Promise<WebhookResponseDto> {
    return toWebhookResponse(await this.queries.execute(new GetWebhookQuery(p, id)));
  }

  @Post(':id')
  @ApiOperation({
    summary: 'Update a webhook endpoint',
    description:
      'Only the fields given change; at least one of url, events, description, enabled is required (`{}` is 400 invalid_request naming them). ' +
      'null is accepted only for description (it clears it); null for url, events or enabled is 400 naming the field. ' +
      "Disabling ends the endpoint's pending deliveries `failed` (endpoint_disabled).",
  })
  @ApiIdempotencyKey(false)
  @ApiJsonBody(UpdateWebhookRequestDto, {
    events: { summary: 'Subscribe to attachments too', value: { events: ['run.completed', 'run.failed', 'run.requires_action', 'attachment.ready', 'attachment.rejected'] } },
  })
  @ApiOkResponse({ type: WebhookResponseDto })
  @ApiErrors('forbidden', 'invalid_request', 'webhook_not_found')
  async update(
    @CurrentPrincipal() p: Principal,
    @Param('id') id: string,
    @Body() dto: UpdateWebhookRequestDto,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    if (UPDATE_WEBHOOK_FIELDS.every((f) => dto[f] === undefined)) {
      // A validation error (not stored under an Idempotency-Key), like the DTO's own.
      throw invalidRequest(`give at least one of ${UPDATE_WEBHOOK_FIELDS.join(', ')}`, [
        { field: 'body', message: `must set at least one of ${UPDATE_WEBHOOK_FIELDS.join(', ')}` },
      ]);
    }
    await this.idempotent.execute(req, reply, {}, async () => {
      const e = await this.commands.execute(new UpdateWebhookCommand(p, id, { url: dto.url, events: dto.events, description: dto.description, enabled: dto.enabled }));
      return { status: 200, body: toWebhookResponse(e) };
    });
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({
    summary: 'Delete a webhook endpoint',
    description: 'It is gone from every route (404 from now on, its delivery log included) and its pending deliveries end `failed` (endpoint_disabled); nothing more is sent to it.',
  })
  @ApiNoContentResponse()
  @ApiErrors('forbidden', 'webhook_not_found')
  async remove(@CurrentPrincipal() p: Principal, @Param('id') id: string): Promise<void> {
    await this.commands.execute(new DeleteWebhookCommand(p, id));
  }

  @Post(':id/rotate_secret')
  @ApiOperation({
    summary: 'Rotate the signing secret',
    description: `The answer holds the new secret (shown only here); attempts from now on are signed with it. ${SECRET_REPLAY}`,
  })
  @ApiIdempotencyKey(false)
  @ApiOkResponse({ type: WebhookWithSecretResponseDto, headers: SECRET_REPLAY_HEADERS })
  @ApiErrors('forbidden', 'webhook_not_found')
  async rotate(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    await this.idempotent.execute(req, reply, { secret: this.secretOf(p) }, async () => {
      const { endpoint, secret } = await this.commands.execute(new RotateWebhookSecretCommand(p, id));
      const body: WebhookWithSecretResponseDto = { ...toWebhookResponse(endpoint), secret };
      return { status: 200, body, secretRef: secretRef(endpoint) };
    });
  }

  /** The `secret` of a create or rotate answer is stored by reference; a replay opens it again through the query. */
  private secretOf(p: Principal): SecretInResponse {
    return {
      field: 'secret',
      rehydrate: (ref) => this.queries.execute(new GetWebhookSecretQuery(p, String(ref.webhook_id), Number(ref.secret_version))),
    };
  }

  @Get(':id/deliveries')
  @ApiOperation({ summary: "An endpoint's delivery log", description: 'Newest first (`order` desc by default; asc oldest first): status, attempts, last response status, next attempt.' })
  @ApiOkResponse({ type: WebhookDeliveryListResponseDto })
  @ApiErrors('forbidden', 'invalid_request', 'webhook_not_found')
  async deliveries(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Query() q: ListQueryDto): Promise<WebhookDeliveryListResponseDto> {
    const { items, hasMore } = await this.queries.execute(new ListWebhookDeliveriesQuery(p, id, { after: q.after, limit: q.limit ?? 20, order: q.order ?? 'desc' }));
    return listPage(items.map(toDeliveryResponse), hasMore);
  }
}
