import { Controller, Get, Param, Query } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal } from '../../../common/auth/auth.decorators';
import { Principal } from '../../../common/auth/principal';
import { ApiErrors } from '../../../common/errors/error.dto';
import { listPage, ListQueryDto } from '../../../common/http/pagination';
import { ToolVisibilityResolver } from '../../events/application/tool-visibility';
import { projectContent } from '../../events/domain/event-projector';
import { GetMessageQuery } from '../application/queries/get-message/get-message.query';
import { ListMessagesQuery } from '../application/queries/list-messages/list-messages.query';
import { MessageProps } from '../domain/message';
import { MessageListResponseDto, MessageResponseDto, toMessageResponse } from './dto/message.response.dto';

@ApiTags('Messages')
@ApiBearerAuth('api-key')
@Controller('v1/sessions/:id/messages')
export class MessagesController {
  constructor(
    private readonly queries: QueryBus,
    private readonly visibility: ToolVisibilityResolver,
  ) {}

  private view(principal: Principal, m: MessageProps): MessageResponseDto {
    return toMessageResponse(m, projectContent(m.content, principal.role, this.visibility.lookup));
  }

  @Get()
  @ApiOperation({ summary: "List a session's messages", description: 'Default order: asc (by sequence). Deltas are never messages.' })
  @ApiOkResponse({ type: MessageListResponseDto })
  @ApiErrors('session_not_found', 'invalid_cursor', 'invalid_request')
  async list(@CurrentPrincipal() principal: Principal, @Param('id') sessionId: string, @Query() q: ListQueryDto): Promise<MessageListResponseDto> {
    const { items, hasMore } = await this.queries.execute(
      new ListMessagesQuery(principal, sessionId, { after: q.after, limit: q.limit ?? 20, order: q.order ?? 'asc' }),
    );
    return listPage(
      items.map((m) => this.view(principal, m)),
      hasMore,
    );
  }

  @Get(':message_id')
  @ApiOperation({ summary: 'Get a message' })
  @ApiOkResponse({ type: MessageResponseDto })
  @ApiErrors('session_not_found', 'message_not_found')
  async get(@CurrentPrincipal() principal: Principal, @Param('id') sessionId: string, @Param('message_id') messageId: string): Promise<MessageResponseDto> {
    return this.view(principal, await this.queries.execute(new GetMessageQuery(principal, sessionId, messageId)));
  }
}
