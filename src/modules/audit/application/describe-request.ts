import { isApiRoute } from '../../../common/http/route-path';
import type { Principal } from '../../../common/auth/principal';
import { NewAuditRecord } from '../domain/audit-record';

export const AUDITED_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** What the HTTP layer knows about a finished state-changing request. */
export interface FinishedRequest {
  principal: Principal;
  method: string;
  /** The path with its query string, as received. */
  url: string;
  /** The route template, e.g. `/v1/sessions/:id/archive`; null when no route matched. */
  route: string | null;
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
  requestId: string;
  idempotencyKey: string | null;
  status: number;
  /** The parsed JSON response body, when there is one. */
  response: unknown;
  replayed: boolean;
  /**
   * The session the request acted in, when the handler named it (`noteAuditSession`) because
   * neither the route nor the response body says (an approval decision answers an Approval).
   */
  sessionId?: string | null;
  /** The route withholds its request body (`AUDIT_WITHHOLDS_BODY`: it carries a secret). */
  bodyWithheld?: boolean;
  /** What the handler noted it did (`noteAuditResult`), recorded as `data.result`. */
  result?: Record<string, unknown> | null;
}

const notedSessions = new WeakMap<object, string>();

/**
 * Tells the request audit record which session `req` acted in. For handlers whose response does
 * not carry `session_id` although they loaded the run (so it costs nothing); the audit hook
 * otherwise looks the run's session up.
 */
export function noteAuditSession(req: object, sessionId: string): void {
  notedSessions.set(req, sessionId);
}

/** The session a handler noted for `req` with `noteAuditSession`, if any. */
export function notedAuditSession(req: object): string | null {
  return notedSessions.get(req) ?? null;
}

/**
 * True for the requests the trail records: state-changing methods on a `/v1/*` route (by the
 * route template the router matched, never the URL text: see route-path.ts).
 */
export function isAuditedRequest(method: string, route: string | null): boolean {
  return AUDITED_METHODS.has(method.toUpperCase()) && isApiRoute(route);
}

function singular(collection: string): string {
  return collection.endsWith('s') ? collection.slice(0, -1) : collection;
}

function str(v: unknown): string | null {
  return typeof v === 'string' && v.length > 0 ? v : null;
}

function asObject(v: unknown): Record<string, unknown> | null {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}

/**
 * The resource a request acted on, from the route template, its path params and the response:
 * 1. a success response naming itself (`{"object":"session","id":...}`) -> that resource;
 * 2. a route ending in a collection (`/v1/sessions/:id/runs`) whose response has `<singular>_id`
 *    (`run_id`) -> that resource;
 * 3. else the last `collection/:param` pair of the path (`/v1/sessions/:id/archive` -> session);
 * 4. else the route's last segment (`POST /v1/sessions` that failed -> session, id null).
 */
export function resourceOf(route: string, params: Record<string, string>, status: number, response: unknown): { type: string | null; id: string | null } {
  const segments = route.split('/').filter((s) => s && s !== 'v1');
  const pairs: Array<{ collection: string; id: string }> = [];
  let trailing: string[] = [];
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i];
    if (seg.startsWith(':')) {
      const prev = segments[i - 1];
      const value = params[seg.slice(1)];
      if (prev && !prev.startsWith(':') && value !== undefined) pairs.push({ collection: prev, id: value });
      trailing = [];
    } else {
      trailing.push(seg);
    }
  }
  const body = status < 300 ? asObject(response) : null;
  if (body && str(body.object) && body.object !== 'list' && str(body.id)) return { type: body.object as string, id: body.id as string };
  const last = trailing.length ? trailing[trailing.length - 1] : null;
  if (body && last && str(body[`${singular(last)}_id`])) return { type: singular(last), id: body[`${singular(last)}_id`] as string };
  if (trailing.length === 1 && !pairs.length) return { type: singular(trailing[0]), id: null };
  if (pairs.length) {
    const p = pairs[pairs.length - 1];
    return { type: singular(p.collection), id: p.id };
  }
  return { type: last ? singular(last) : null, id: null };
}

/** The audit record of one finished request. */
export function describeRequest(r: FinishedRequest): NewAuditRecord {
  const route = r.route ?? r.url.split('?')[0];
  const method = r.method.toUpperCase();
  const resource = resourceOf(route, r.params, r.status, r.response);
  const body = asObject(r.response);
  const errorCode = r.status >= 400 ? (str(asObject(body?.error)?.code) ?? `http_${r.status}`) : null;
  const ok = r.status < 400 ? body : null;
  const sessionId =
    (resource.type === 'session' ? resource.id : null) ??
    str(r.params.session_id) ??
    (r.route?.startsWith('/v1/sessions/:id') ? str(r.params.id) : null) ??
    str(ok?.session_id) ??
    str(r.sessionId);
  const runId = (resource.type === 'run' ? resource.id : null) ?? str(r.params.run_id) ?? (r.route?.startsWith('/v1/runs/:id') ? str(r.params.id) : null) ?? str(ok?.run_id);
  return {
    tenantId: r.principal.tenantId,
    actorSubjectId: r.principal.subjectId,
    actorRole: r.principal.role,
    actorKeyId: r.principal.keyId,
    action: `${method} ${route}`,
    resourceType: resource.type,
    resourceId: resource.id,
    sessionId,
    runId,
    requestId: r.requestId,
    outcome: errorCode ?? 'ok',
    status: r.status,
    data: {
      request: {
        method,
        url: r.url,
        params: r.params,
        query: r.query,
        body: r.bodyWithheld || r.body === undefined ? null : r.body,
        ...(r.bodyWithheld ? { body_withheld: true } : {}),
        idempotency_key: r.idempotencyKey,
      },
      response: { status: r.status, error_code: errorCode, idempotent_replayed: r.replayed },
      ...(r.result ? { result: r.result } : {}),
    },
  };
}

/** Outcomes after which the run's session is not looked up: the caller cannot see the run, or the request was turned away before any work. */
const NO_SESSION_LOOKUP = new Set(['run_not_found', 'not_found', 'unauthorized', 'forbidden', 'rate_limited']);

/**
 * True when a request on a run has no session yet (an error, a replayed approval decision) and
 * the audit hook should look the run's session up (as the caller: a run it cannot see gives none).
 * Not after 5xx (the database may be the problem) or outcomes that say the run is not the caller's.
 */
export function needsRunSessionLookup(record: Pick<NewAuditRecord, 'sessionId' | 'runId' | 'outcome' | 'status'>): boolean {
  if (record.sessionId || !record.runId) return false;
  if (record.status !== null && record.status >= 500) return false;
  return !NO_SESSION_LOOKUP.has(record.outcome ?? '');
}
