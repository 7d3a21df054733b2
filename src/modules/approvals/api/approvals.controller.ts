import { Body, Controller, Get, Param, Post, Query, Req, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CurrentPrincipal } from '../../../common/auth/auth.decorators';
import { Principal } from '../../../common/auth/principal';
import { ApiErrors } from '../../../common/errors/error.dto';
import { ApiIdempotencyKey, ApiJsonBody } from '../../../common/http/api-docs.decorators';
import { listPage, ListQueryDto } from '../../../common/http/pagination';
import { noteAuditSession } from '../../audit/application/describe-request';
import { IdempotentExecutor } from '../../idempotency/application/idempotent-executor';
import { ToolArgumentsRedactor } from '../../runs/application/tool-arguments-redactor';
import { DecideApprovalCommand } from '../application/commands/decide-approval/decide-approval.command';
import { ListApprovalsQuery } from '../application/queries/list-approvals/list-approvals.query';
import { ApprovalProps } from '../domain/approval.aggregate';
import { ApprovalListResponseDto, ApprovalResponseDto, DecideApprovalRequestDto, toApprovalResponse } from './dto/approval.dto';

@ApiTags('Approvals')
@ApiBearerAuth('api-key')
@Controller('v1/runs/:id/approvals')
export class ApprovalsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    private readonly idempotent: IdempotentExecutor,
    private readonly redactor: ToolArgumentsRedactor,
  ) {}

  private view(principal: Principal, a: Readonly<ApprovalProps>): ApprovalResponseDto {
    return toApprovalResponse(a, this.redactor.redact(principal, a.toolName, a.arguments));
  }

  @Get()
  @ApiOperation({
    summary: "List a run's approvals",
    description:
      "Oldest first by default. Also lists the approvals asked inside the run's subagents (CONTRACT 16: the child sessions it created and theirs; each approval's `run_id` names the run that asked), " +
      'as far as the caller may see them (a member: their own children); each is decided through this route or its own run\'s.',
  })
  @ApiOkResponse({ type: ApprovalListResponseDto })
  @ApiErrors('run_not_found', 'invalid_cursor', 'invalid_request')
  async list(@CurrentPrincipal() principal: Principal, @Param('id') runId: string, @Query() q: ListQueryDto): Promise<ApprovalListResponseDto> {
    const { items, hasMore } = await this.queries.execute(new ListApprovalsQuery(principal, runId, { after: q.after, limit: q.limit ?? 20, order: q.order ?? 'asc' }));
    return listPage(
      items.map((a) => this.view(principal, a)),
      hasMore,
    );
  }

  @Post(':approval_id')
  @ApiOperation({
    summary: 'Approve or reject a tool call',
    description:
      'Approve: the run resumes from its saved state (no new user message, step count kept) and executes the tool exactly once. ' +
      'Reject: the tool is not executed; the model gets the rejection as the tool result and continues. ' +
      'The same decision again answers 200 unchanged; a different one is 409 `approval_already_decided`; a run that is no longer waiting is 409 `approval_not_pending`. ' +
      'Of concurrent deciders exactly one wins. ' +
      "An approval asked inside one of the run's subagents (listed by this run's route) is decided here too: its own run resumes.",
  })
  @ApiIdempotencyKey(false)
  @ApiJsonBody(DecideApprovalRequestDto, {
    approve: { summary: 'Approve: the tool runs', value: { decision: 'approve', reason: 'customer confirmed by phone' } },
    reject: { summary: 'Reject: the model gets the rejection', value: { decision: 'reject', reason: 'not eligible' } },
  })
  @ApiOkResponse({ type: ApprovalResponseDto })
  @ApiErrors('invalid_request', 'run_not_found', 'approval_not_found', 'approval_already_decided', 'approval_not_pending')
  async decide(
    @CurrentPrincipal() principal: Principal,
    @Param('id') runId: string,
    @Param('approval_id') approvalId: string,
    @Body() dto: DecideApprovalRequestDto,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
  ) {
    await this.idempotent.execute(req, reply, {}, async () => {
      const a = await this.commands.execute(new DecideApprovalCommand(principal, runId, approvalId, dto.decision, dto.reason ?? null));
      // The Approval answered has no session_id: name the run's session for the audit record.
      noteAuditSession(req, a.sessionId);
      return { status: 200, body: this.view(principal, a) };
    });
  }
}
