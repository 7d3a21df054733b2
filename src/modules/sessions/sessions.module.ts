import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AgentsModule } from '../agents/agents.module';
import { SessionsController } from './api/sessions.controller';
import { ArchiveSessionHandler } from './application/commands/archive-session/archive-session.handler';
import { CreateSessionHandler } from './application/commands/create-session/create-session.handler';
import { DeleteSessionHandler } from './application/commands/delete-session/delete-session.handler';
import { UpdateSessionHandler } from './application/commands/update-session/update-session.handler';
import { GetSessionHandler } from './application/queries/get-session/get-session.handler';
import { ListSessionsHandler } from './application/queries/list-sessions/list-sessions.handler';
import { SessionRepository } from './domain/session.repository';
import { SessionOrmEntity } from './infrastructure/session.orm-entity';
import { SessionTypeormRepository } from './infrastructure/session.typeorm-repository';

@Module({
  imports: [TypeOrmModule.forFeature([SessionOrmEntity]), AgentsModule],
  controllers: [SessionsController],
  providers: [
    { provide: SessionRepository, useClass: SessionTypeormRepository },
    CreateSessionHandler,
    UpdateSessionHandler,
    ArchiveSessionHandler,
    DeleteSessionHandler,
    GetSessionHandler,
    ListSessionsHandler,
  ],
  exports: [SessionRepository],
})
export class SessionsModule {}
