import type { FastifyRequest } from 'fastify';

/**
 * What decides by path (the rate limit, audit, metrics and log labels) uses the route the router
 * matched, never the request's URL text: the router also matches an absolute-form target
 * (`GET http://host/v1/sessions`) and percent-encoded paths (`/%76%31/sessions`), which
 * text comparisons on `req.url` would not recognise.
 */

/** The matched route's template (`/v1/sessions/:id`), or null when no route matched (404). */
export function routeOf(req: Pick<FastifyRequest, 'routeOptions'>): string | null {
  return req.routeOptions?.url ?? null;
}

/**
 * True for a route template of the API (`/v1` and below, and the compatibility surfaces such as
 * `/openai/v1/...` and `/ag-ui/...`): limited, authenticated, audited. `/v1` routes answer at the second test.
 */
export function isApiRoute(route: string | null | undefined): boolean {
  return route === '/v1' || (typeof route === 'string' && (route.startsWith('/v1/') || route.startsWith('/openai/v1/') || route.startsWith('/ag-ui/')));
}
