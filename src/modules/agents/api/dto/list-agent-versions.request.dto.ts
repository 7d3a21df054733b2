import { ApiPropertyOptional } from '@nestjs/swagger';
import { ListQueryDto } from '../../../../common/http/pagination';

/** The shared `after`, `limit`, `order` (same rules); versions share their agent's id, so `after` names a version. */
export class AgentVersionsQueryDto extends ListQueryDto {
  @ApiPropertyOptional({ example: '1', description: 'A `version` of this agent (e.g. the last item of the previous page): the page starts after it. Any other value: 400 `invalid_cursor`.' })
  override after?: string;
}
