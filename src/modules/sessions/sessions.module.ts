import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AgentsModule } from '../agents/agents.module';
import { EventsModule } from '../events/events.module';
import { MessagesController } from './api/messages.controller';
import { SessionsController } from './api/sessions.controller';
import { ExistingSessionsHandler } from './application/queries/existing-sessions/existing-sessions.handler';
import { GetMessageHandler } from './application/queries/get-message/get-message.handler';
import { ListMessagesHandler } from './application/queries/list-messages/list-messages.handler';
import { ArchiveSessionHandler } from './application/commands/archive-session/archive-session.handler';
import { CreateSessionHandler } from './application/commands/create-session/create-session.handler';
import { DeleteSessionHandler } from './application/commands/delete-session/delete-session.handler';
import { UpdateSessionHandler } from './application/commands/update-session/update-session.handler';
import { GetSessionHandler } from './application/queries/get-session/get-session.handler';
import { CloseSubagentHandler } from './application/commands/close-subagent/close-subagent.handler';
import { ListSubagentsHandler } from './application/queries/list-subagents/list-subagents.handler';
import { SubagentSessionIdsHandler } from './application/queries/subagent-session-ids/subagent-session-ids.handler';
import { GetSessionOwnerHandler } from './application/queries/get-session-owner/get-session-owner.handler';
import { ListSessionsHandler } from './application/queries/list-sessions/list-sessions.handler';
import { SessionWorkStatusHandler } from './application/queries/session-work-status/session-work-status.handler';
import { MessageRepository } from './domain/message.repository';
import { MessageStatementParts } from './infrastructure/message-statement-parts';
import { SessionRepository } from './domain/session.repository';
import { MessageTypeormRepository } from './infrastructure/message.typeorm-repository';
import { SessionOrmEntity } from './infrastructure/session.orm-entity';
import { SessionTypeormRepository } from './infrastructure/session.typeorm-repository';
import { KnownSessions } from './application/known-sessions';
import { SessionTtlSweeper } from './application/ttl/session-ttl.sweeper';

@Module({
  imports: [TypeOrmModule.forFeature([SessionOrmEntity]), AgentsModule, EventsModule],
  controllers: [SessionsController, MessagesController],
  providers: [
    { provide: SessionRepository, useClass: SessionTypeormRepository },
    MessageTypeormRepository,
    { provide: MessageRepository, useExisting: MessageTypeormRepository },
    { provide: MessageStatementParts, useExisting: MessageTypeormRepository },
    CreateSessionHandler,
    UpdateSessionHandler,
    ArchiveSessionHandler,
    DeleteSessionHandler,
    GetSessionHandler,
    ListSubagentsHandler,
    SubagentSessionIdsHandler,
    CloseSubagentHandler,
    GetSessionOwnerHandler,
    ListSessionsHandler,
    SessionWorkStatusHandler,
    ListMessagesHandler,
    GetMessageHandler,
    ExistingSessionsHandler,
    KnownSessions,
    SessionTtlSweeper,
  ],
  exports: [SessionRepository, MessageRepository, MessageStatementParts, KnownSessions],
})
export class SessionsModule {}
