import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, MaxLength } from 'class-validator';
import { iso } from '../../../../common/http/pagination';
import { ApprovalProps } from '../../domain/approval.aggregate';

export class DecideApprovalRequestDto {
  @ApiProperty({ enum: ['approve', 'reject'], example: 'approve' })
  @IsIn(['approve', 'reject'])
  decision!: 'approve' | 'reject';

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 1000, example: 'customer confirmed by phone', description: 'null: no reason (as omitted).' })
  @IsOptional()
  @IsString()
  @MaxLength(1000)
  reason?: string;
}

export class ApprovalResponseDto {
  @ApiProperty({ example: 'apr_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) id!: string;
  @ApiProperty({ enum: ['approval'] }) object!: 'approval';
  @ApiProperty({ example: 'run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) run_id!: string;
  @ApiProperty({ example: 'call_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) tool_call_id!: string;
  @ApiProperty({ example: 'create_ticket' }) tool_name!: string;
  @ApiProperty({ type: 'object', additionalProperties: true, example: { order_id: 'O-1001', reason: 'paid but not shipped' } }) arguments!: unknown;
  @ApiProperty({ example: 'approve' }) risk!: string;
  @ApiProperty({ enum: ['pending', 'approved', 'rejected', 'expired', 'cancelled'] }) status!: string;
  @ApiProperty({ type: String, nullable: true, example: 'user_dev' }) decided_by!: string | null;
  @ApiProperty({ type: String, nullable: true }) reason!: string | null;
  @ApiProperty({ example: '2026-11-30T09:00:00.000Z' }) created_at!: string;
  @ApiProperty({ type: String, nullable: true }) decided_at!: string | null;
  @ApiProperty({ example: '2026-12-01T09:00:00.000Z' }) expires_at!: string;
}

export function toApprovalResponse(a: Readonly<ApprovalProps>, args: unknown): ApprovalResponseDto {
  return {
    id: a.id,
    object: 'approval',
    run_id: a.runId,
    tool_call_id: a.toolCallId,
    tool_name: a.toolName,
    arguments: args,
    risk: a.risk,
    status: a.status,
    decided_by: a.decidedBy,
    reason: a.reason,
    created_at: iso(a.createdAt)!,
    decided_at: iso(a.decidedAt),
    expires_at: iso(a.expiresAt)!,
  };
}

export class ApprovalListResponseDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [ApprovalResponseDto] }) data!: ApprovalResponseDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}
