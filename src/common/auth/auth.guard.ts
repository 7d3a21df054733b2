import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { DomainError } from '../errors/domain-error';
import { ApiKeysService } from './api-keys.service';
import { ADMIN_ONLY, AuthedRequest, KEY_OPTIONAL, PUBLIC_ROUTE } from './auth.decorators';

/** Global guard: `Authorization: Bearer <key>` on every route not marked @Public(). */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly keys: ApiKeysService,
  ) {}

  canActivate(ctx: ExecutionContext): boolean {
    const targets = [ctx.getHandler(), ctx.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, targets)) return true;
    const req = ctx.switchToHttp().getRequest<AuthedRequest>();
    if (req.headers.authorization === undefined && this.reflector.getAllAndOverride<boolean>(KEY_OPTIONAL, targets)) return true;
    // In memory, and already resolved by the rate limit in onRequest (same request, same answer).
    const principal = this.keys.authenticateRequest(req);
    if (!principal) throw new DomainError('unauthorized', 'missing or unknown API key');
    req.principal = principal;
    if (this.reflector.getAllAndOverride<boolean>(ADMIN_ONLY, targets) && principal.role !== 'admin') {
      throw new DomainError('forbidden', 'this route needs an admin API key');
    }
    return true;
  }
}
