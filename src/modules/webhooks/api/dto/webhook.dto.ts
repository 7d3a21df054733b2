import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsDefined, IsIn, IsOptional, IsString, MaxLength, ValidateIf } from 'class-validator';
import { WEBHOOK_EVENT_TYPES, WebhookDelivery, WebhookEndpoint, WebhookEventType } from '../../domain/webhook-events';

export class CreateWebhookRequestDto {
  @ApiProperty({ example: 'https://hooks.example.com/agent-api', description: 'Must start with an entry of OUTBOUND_URL_ALLOWLIST (else 400).' })
  @IsString()
  @MaxLength(2048)
  url!: string;

  @ApiProperty({ enum: WEBHOOK_EVENT_TYPES, isArray: true, example: ['run.completed', 'run.requires_action'] })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(WEBHOOK_EVENT_TYPES.length)
  @IsIn(WEBHOOK_EVENT_TYPES, { each: true })
  events!: WebhookEventType[];

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 500 })
  @ValidateIf((_, v) => v !== null)
  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string | null;
}

/** A field of an update that may be left out but not set to null (only `description` may be null: it clears it). */
const NOT_NULL = { message: '$property must not be null (leave it out to keep it unchanged)' };
const given = (_: object, v: unknown) => v !== undefined;

/** The fields of an update; at least one is required (`{}` is 400, naming them). */
export const UPDATE_WEBHOOK_FIELDS = ['url', 'events', 'description', 'enabled'] as const;

export class UpdateWebhookRequestDto {
  @ApiPropertyOptional({ description: 'Must start with an entry of OUTBOUND_URL_ALLOWLIST (else 400). Not null.' })
  @ValidateIf(given)
  @IsDefined(NOT_NULL)
  @IsString()
  @MaxLength(2048)
  url?: string;

  @ApiPropertyOptional({ enum: WEBHOOK_EVENT_TYPES, isArray: true, description: 'Replaces the subscribed types (at least one). Not null.' })
  @ValidateIf(given)
  @IsDefined(NOT_NULL)
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(WEBHOOK_EVENT_TYPES.length)
  @IsIn(WEBHOOK_EVENT_TYPES, { each: true })
  events?: WebhookEventType[];

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 500, description: 'null clears it.' })
  @ValidateIf((_, v) => v !== null)
  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string | null;

  @ApiPropertyOptional({
    description:
      'Not null. A disabled endpoint gets no new deliveries; its pending ones end `failed` with last_error `endpoint_disabled` ' +
      '(attempts as they were: 0 for those never attempted; one in flight ends so once its attempt is over, unless it was delivered).',
  })
  @ValidateIf(given)
  @IsDefined(NOT_NULL)
  @IsBoolean()
  enabled?: boolean;
}

export class WebhookResponseDto {
  @ApiProperty({ example: 'wh_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) id!: string;
  @ApiProperty({ enum: ['webhook_endpoint'] }) object!: 'webhook_endpoint';
  @ApiProperty() url!: string;
  @ApiProperty({ enum: WEBHOOK_EVENT_TYPES, isArray: true }) events!: string[];
  @ApiProperty({ type: String, nullable: true }) description!: string | null;
  @ApiProperty() enabled!: boolean;
  @ApiProperty({ format: 'date-time' }) created_at!: string;
  @ApiProperty({ format: 'date-time' }) updated_at!: string;
}

export class WebhookWithSecretResponseDto extends WebhookResponseDto {
  @ApiProperty({
    type: String,
    nullable: true,
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw0X2K3vQ7J1c=',
    description:
      'The signing secret (`whsec_` + base64 of 32 bytes): shown only here. Verify deliveries with it (Standard Webhooks). ' +
      'null only on a replay (same Idempotency-Key) after the secret was rotated or the endpoint deleted since: see the `Idempotent-Secret-Withheld` header.',
  })
  secret!: string | null;
}

export class WebhookListResponseDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [WebhookResponseDto] }) data!: WebhookResponseDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}

export class WebhookDeliveryResponseDto {
  @ApiProperty({ description: 'The event id: the body `id` and the `webhook-id` header of every attempt.' }) id!: string;
  @ApiProperty({ enum: ['webhook_delivery'] }) object!: 'webhook_delivery';
  @ApiProperty() webhook_id!: string;
  @ApiProperty({ enum: WEBHOOK_EVENT_TYPES }) type!: string;
  @ApiProperty({ description: 'The run or attachment id.' }) object_id!: string;
  @ApiProperty({ enum: ['pending', 'delivered', 'failed'] }) status!: string;
  @ApiProperty() attempts!: number;
  @ApiProperty({ type: Number, nullable: true }) last_response_status!: number | null;
  @ApiProperty({ type: String, nullable: true, description: 'Why the last attempt failed: http_<status>, timeout, network, too_large, url_not_allowed, endpoint_disabled, object_gone; render_failed or render_timeout when the payload could not be read (in time) and no request was made.' })
  last_error!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'The first 256 characters of the last response body (nothing more is kept).' })
  last_response_excerpt!: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'date-time', description: 'When the next attempt is due (pending only).' })
  next_attempt_at!: string | null;
  @ApiProperty({ format: 'date-time' }) created_at!: string;
  @ApiProperty({ type: String, nullable: true, format: 'date-time' }) delivered_at!: string | null;
}

export class WebhookDeliveryListResponseDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [WebhookDeliveryResponseDto] }) data!: WebhookDeliveryResponseDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}

export function toWebhookResponse(e: WebhookEndpoint): WebhookResponseDto {
  return {
    id: e.id,
    object: 'webhook_endpoint',
    url: e.url,
    events: e.events,
    description: e.description,
    enabled: e.enabled,
    created_at: e.createdAt.toISOString(),
    updated_at: e.updatedAt.toISOString(),
  };
}

export function toDeliveryResponse(d: WebhookDelivery): WebhookDeliveryResponseDto {
  return {
    id: d.id,
    object: 'webhook_delivery',
    webhook_id: d.endpointId,
    type: d.eventType,
    object_id: d.objectId,
    status: d.status,
    attempts: d.attempts,
    last_response_status: d.lastResponseStatus,
    last_error: d.lastError,
    last_response_excerpt: d.lastResponseExcerpt,
    next_attempt_at: d.status === 'pending' && d.nextAttemptAt ? d.nextAttemptAt.toISOString() : null,
    created_at: d.createdAt.toISOString(),
    delivered_at: d.deliveredAt ? d.deliveredAt.toISOString() : null,
  };
}
