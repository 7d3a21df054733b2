import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional } from 'class-validator';
import { ListQueryDto } from '../../../../common/http/pagination';
import { WORK_STATUSES, WorkStatus } from '../../domain/work-status';

export class ListSessionsQueryDto extends ListQueryDto {
  @ApiPropertyOptional({ enum: WORK_STATUSES, description: 'Only sessions with this `work_status` now.' })
  @IsOptional()
  @IsIn(WORK_STATUSES)
  work_status?: WorkStatus;
}
