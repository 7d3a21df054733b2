import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { DomainError } from '../errors/domain-error';
import { ApiKeysService, requestKeyHash } from './api-keys.service';
import { ADMIN_ONLY, AuthedRequest, PUBLIC_ROUTE } from './auth.decorators';

export const BEARER = /^Bearer\s+([A-Za-z0-9_-]{1,512})\s*$/i;

/** Global guard: `Authorization: Bearer <key>` on every route not marked @Public(). */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly keys: ApiKeysService,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const targets = [ctx.getHandler(), ctx.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, targets)) return true;
    const req = ctx.switchToHttp().getRequest<AuthedRequest>();
    const header = req.headers.authorization;
    const match = typeof header === 'string' ? BEARER.exec(header) : null;
    // The rate limit hashed the same key in onRequest: requestKeyHash reuses it.
    const principal = match ? await this.keys.authenticateHash(requestKeyHash(req, match[1])) : null;
    if (!principal) throw new DomainError('unauthorized', 'missing or unknown API key');
    req.principal = principal;
    if (this.reflector.getAllAndOverride<boolean>(ADMIN_ONLY, targets) && principal.role !== 'admin') {
      throw new DomainError('forbidden', 'this route needs an admin API key');
    }
    return true;
  }
}
