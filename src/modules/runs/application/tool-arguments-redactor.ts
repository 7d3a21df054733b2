import { Injectable } from '@nestjs/common';
import { Principal } from '../../../common/auth/principal';
import { ToolVisibilityResolver } from '../../events/application/tool-visibility';
import { maskSecrets, REDACTED } from '../../events/domain/event-projector';

/** Member view of tool arguments in run resources (CONTRACT section 10), as the event projector does it. */
@Injectable()
export class ToolArgumentsRedactor {
  constructor(private readonly visibility: ToolVisibilityResolver) {}

  redact(principal: Principal, toolName: string, args: unknown): unknown {
    if (principal.role === 'admin') return args;
    if (this.visibility.lookup(toolName) === 'private') return { ...REDACTED };
    return maskSecrets(args);
  }
}
