import { createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { Principal } from './principal';

export const PUBLIC_ROUTE = 'auth:public';
export const ADMIN_ONLY = 'auth:admin';
export const KEY_OPTIONAL = 'auth:key-optional';

/** The route needs no API key (health, metrics, docs). */
export const Public = () => SetMetadata(PUBLIC_ROUTE, true);
/**
 * The route may be called without an API key (it authorises otherwise, e.g. a `Callback-Token`);
 * a request that sends `Authorization` is authenticated as everywhere (401 when unknown).
 */
export const KeyOptional = () => SetMetadata(KEY_OPTIONAL, true);
/** The route needs role admin: members get 403 `forbidden`. */
export const AdminOnly = () => SetMetadata(ADMIN_ONLY, true);

export type AuthedRequest = FastifyRequest & { principal?: Principal };

/** The authenticated caller. */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  const req = ctx.switchToHttp().getRequest<AuthedRequest>();
  if (!req.principal) throw new Error('CurrentPrincipal used on a public route');
  return req.principal;
});

/** The authenticated caller on a `@KeyOptional()` route, or undefined when it sent no API key. */
export const OptionalPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal | undefined => {
  return ctx.switchToHttp().getRequest<AuthedRequest>().principal;
});
