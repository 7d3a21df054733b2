import type { FastifyRequest } from 'fastify';

/**
 * Route config (`@RouteConfig(AUDIT_WITHHOLDS_BODY)` from @nestjs/platform-fastify) of a route
 * whose request body carries a secret (`PUT /v1/secrets/{name}`): its audit record keeps no
 * request body at all (`body: null, body_withheld: true`), also when the request failed
 * validation before any handler ran - so the rule is the route's, not the handler's.
 */
export const AUDIT_WITHHOLDS_BODY = { auditWithholdsBody: true } as const;

/** True when the route `req` matched withholds its request body from the audit trail. */
export function auditWithholdsBody(req: FastifyRequest): boolean {
  return (req.routeOptions?.config as { auditWithholdsBody?: boolean } | undefined)?.auditWithholdsBody === true;
}

const notedResults = new WeakMap<object, Record<string, unknown>>();

/**
 * What a handler wants its request's audit record to say it did, beyond status and error code
 * (`{name, version}` of a secret written or deleted, whose 204 has no body to read it from).
 * Recorded as `data.result`; never put a secret in it.
 */
export function noteAuditResult(req: object, result: Record<string, unknown>): void {
  notedResults.set(req, result);
}

/** The result a handler noted for `req` with `noteAuditResult`, if any. */
export function notedAuditResult(req: object): Record<string, unknown> | null {
  return notedResults.get(req) ?? null;
}
