import { createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { Principal } from './principal';

export const PUBLIC_ROUTE = 'auth:public';
export const ADMIN_ONLY = 'auth:admin';

/** The route needs no API key (health, metrics, docs). */
export const Public = () => SetMetadata(PUBLIC_ROUTE, true);
/** The route needs role admin: members get 403 `forbidden`. */
export const AdminOnly = () => SetMetadata(ADMIN_ONLY, true);

export type AuthedRequest = FastifyRequest & { principal?: Principal };

/** The authenticated caller. */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  const req = ctx.switchToHttp().getRequest<AuthedRequest>();
  if (!req.principal) throw new Error('CurrentPrincipal used on a public route');
  return req.principal;
});
