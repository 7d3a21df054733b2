import { ApiProperty } from '@nestjs/swagger';
import { iso } from '../../../../common/http/pagination';
import { MessageProps } from '../../domain/message';

export class MessageResponseDto {
  @ApiProperty({ example: 'msg_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) id!: string;
  @ApiProperty({ enum: ['message'] }) object!: 'message';
  @ApiProperty({ example: 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) session_id!: string;
  @ApiProperty({ type: String, nullable: true, example: 'run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) run_id!: string | null;
  @ApiProperty({ enum: ['user', 'assistant', 'tool', 'system'] }) role!: string;
  @ApiProperty({ enum: ['pending', 'streaming', 'completed', 'failed', 'cancelled'] }) status!: string;
  @ApiProperty({ example: 8, description: 'Position in the session, strictly increasing.' }) sequence!: number;
  @ApiProperty({ example: '2026-11-30T09:00:00.000Z' }) created_at!: string;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' }, example: {} }) metadata!: Record<string, string>;
  @ApiProperty({
    type: 'array',
    items: { $ref: '#/components/schemas/ContentPart' },
    description: 'Parts, by `type`: `text`, `attachment_ref`, `tool_call`, `tool_result`. Members see private tools redacted.',
    example: [{ type: 'text', text: 'Your order O-1001 is paid; I opened ticket T-5F3A2C.' }],
  })
  content!: unknown[];
}

export function toMessageResponse(m: MessageProps, content: unknown): MessageResponseDto {
  return {
    id: m.id,
    object: 'message',
    session_id: m.sessionId,
    run_id: m.runId,
    role: m.role,
    status: m.status,
    sequence: m.sequence,
    created_at: iso(m.createdAt)!,
    metadata: m.metadata,
    content: content as unknown[],
  };
}

export class MessageListResponseDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [MessageResponseDto] }) data!: MessageResponseDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}
