import { Injectable } from '@nestjs/common';
import { Principal } from '../../../common/auth/principal';
import { ToolRegistry } from '../../agents/domain/tool';

const SECRET_KEY = /pass(word)?|secret|token|api[_-]?key|authorization/i;

function maskSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(maskSecrets);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, SECRET_KEY.test(k) ? '***' : maskSecrets(v)]));
  }
  return value;
}

/** Member view of tool arguments in run resources (CONTRACT section 10), like the event projector. */
@Injectable()
export class ToolArgumentsRedactor {
  constructor(private readonly tools: ToolRegistry) {}

  redact(principal: Principal, toolName: string, args: unknown): unknown {
    if (principal.role === 'admin') return args;
    if (this.tools.get(toolName)?.visibility === 'private') return { redacted: true };
    return maskSecrets(args);
  }
}
