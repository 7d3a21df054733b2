import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminOnly, CurrentPrincipal } from '../../../common/auth/auth.decorators';
import { Principal } from '../../../common/auth/principal';
import { ApiErrors } from '../../../common/errors/error.dto';
import { ApiJsonBody } from '../../../common/http/api-docs.decorators';
import { ListQueryDto, listPage } from '../../../common/http/pagination';
import { WebhookEndpoints } from '../application/webhook-endpoints.service';
import {
  CreateWebhookRequestDto,
  toDeliveryResponse,
  toWebhookResponse,
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

@ApiTags('Admin: webhooks')
@ApiBearerAuth('api-key')
@AdminOnly()
@Controller('v1/webhooks')
export class WebhooksController {
  constructor(private readonly endpoints: WebhookEndpoints) {}

  @Post()
  @ApiOperation({
    summary: 'Create a webhook endpoint',
    description: `Admin only. The tenant's runs and attachments notify \`url\` of the subscribed \`events\`. The answer holds the signing \`secret\`, shown only here (and by rotate_secret). ${SIGNING}`,
  })
  @ApiJsonBody(CreateWebhookRequestDto, {
    runs: {
      summary: 'Finished runs and runs that need a human',
      value: { url: 'http://localhost:8080/webhooks', events: ['run.completed', 'run.failed', 'run.requires_action'], description: 'support desk' },
    },
  })
  @ApiCreatedResponse({ type: WebhookWithSecretResponseDto })
  @ApiErrors('forbidden', 'invalid_request')
  async create(@CurrentPrincipal() p: Principal, @Body() dto: CreateWebhookRequestDto): Promise<WebhookWithSecretResponseDto> {
    const { endpoint, secret } = await this.endpoints.create(p, dto);
    return { ...toWebhookResponse(endpoint), secret };
  }

  @Get()
  @ApiOperation({ summary: "List the tenant's webhook endpoints", description: 'Admin only, own tenant only; ordered by id.' })
  @ApiOkResponse({ type: WebhookListResponseDto })
  @ApiErrors('forbidden', 'invalid_request')
  async list(@CurrentPrincipal() p: Principal, @Query() q: ListQueryDto): Promise<WebhookListResponseDto> {
    const { items, hasMore } = await this.endpoints.list(p, q.after, q.limit ?? 20);
    return listPage(items.map(toWebhookResponse), hasMore);
  }

  @Get(':id')
  @ApiOperation({ summary: 'Get a webhook endpoint' })
  @ApiOkResponse({ type: WebhookResponseDto })
  @ApiErrors('forbidden', 'not_found')
  async get(@CurrentPrincipal() p: Principal, @Param('id') id: string): Promise<WebhookResponseDto> {
    return toWebhookResponse(await this.endpoints.get(p, id));
  }

  @Post(':id')
  @HttpCode(200)
  @ApiOperation({ summary: 'Update a webhook endpoint', description: 'Only the fields given change.' })
  @ApiJsonBody(UpdateWebhookRequestDto, {
    events: { summary: 'Subscribe to attachments too', value: { events: ['run.completed', 'run.failed', 'run.requires_action', 'attachment.ready', 'attachment.rejected'] } },
  })
  @ApiOkResponse({ type: WebhookResponseDto })
  @ApiErrors('forbidden', 'invalid_request', 'not_found')
  async update(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Body() dto: UpdateWebhookRequestDto): Promise<WebhookResponseDto> {
    return toWebhookResponse(await this.endpoints.update(p, id, dto));
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a webhook endpoint', description: 'Its pending deliveries go with it.' })
  @ApiNoContentResponse()
  @ApiErrors('forbidden', 'not_found')
  async remove(@CurrentPrincipal() p: Principal, @Param('id') id: string): Promise<void> {
    await this.endpoints.remove(p, id);
  }

  @Post(':id/rotate_secret')
  @HttpCode(200)
  @ApiOperation({ summary: 'Rotate the signing secret', description: 'The answer holds the new secret (shown only here); attempts from now on are signed with it.' })
  @ApiOkResponse({ type: WebhookWithSecretResponseDto })
  @ApiErrors('forbidden', 'not_found')
  async rotate(@CurrentPrincipal() p: Principal, @Param('id') id: string): Promise<WebhookWithSecretResponseDto> {
    const { endpoint, secret } = await this.endpoints.rotateSecret(p, id);
    return { ...toWebhookResponse(endpoint), secret };
  }

  @Get(':id/deliveries')
  @ApiOperation({ summary: "An endpoint's delivery log", description: 'Newest first: status, attempts, last response status, next attempt.' })
  @ApiOkResponse({ type: WebhookDeliveryListResponseDto })
  @ApiErrors('forbidden', 'invalid_request', 'not_found')
  async deliveries(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Query() q: ListQueryDto): Promise<WebhookDeliveryListResponseDto> {
    const { items, hasMore } = await this.endpoints.deliveries(p, id, q.after, q.limit ?? 20);
    return listPage(items.map(toDeliveryResponse), hasMore);
  }
}
