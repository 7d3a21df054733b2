import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { DomainError } from '../errors/domain-error';
import type { ErrorCode } from '../errors/error-codes';
import { SECRET_NAME_RE, SECRET_NAME_RULE } from '../text/secret-name';

/**
 * The one rule for ids in a path: an id that is not well-formed for its resource names nothing,
 * so it is that resource's 404 (`session_not_found`, ...), the answer a well-formed id that does
 * not exist gets, with the same message and details - not a 400, because ids are opaque to
 * clients (CONTRACT: ids are "opaque"; a client only ever sends back ids it was given, and for it
 * "no such id" is the one outcome that matters). A malformed id never reaches a query, so
 * nothing PostgreSQL refuses (U+0000, lone surrogates, ...) can turn it into a 500.
 *
 * Well-formed: `<prefix>_<ULID>` (or `<prefix>_<UUIDv7>`, which the contract also allows) for
 * the prefixed resources; agent ids as agent definitions have them (`[a-z0-9_-]{1,64}`).
 */
interface PathIdRule {
  valid: RegExp;
  code: ErrorCode;
  message: (id: string) => string;
  detail: string;
  /**
   * The parameter is a name the client chooses (a secret's), not an opaque id: a malformed one is
   * 400 `invalid_request` naming this field, as the same name in a body would be, not a 404.
   */
  clientChosen?: { field: string; rule: string };
}

const ULID_OR_UUID7 = '(?:[0-9A-HJKMNP-TV-Z]{26}|[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})';
const prefixed = (prefix: string) => new RegExp(`^${prefix}_${ULID_OR_UUID7}$`);

/** By the collection that precedes the parameter in the route (`/v1/sessions/:id` -> sessions). */
const RULES: Record<string, PathIdRule> = {
  sessions: { valid: prefixed('sess'), code: 'session_not_found', message: () => 'session not found', detail: 'session_id' },
  runs: { valid: prefixed('run'), code: 'run_not_found', message: () => 'run not found', detail: 'run_id' },
  messages: { valid: prefixed('msg'), code: 'message_not_found', message: () => 'message not found', detail: 'message_id' },
  attachments: { valid: prefixed('att'), code: 'attachment_not_found', message: () => 'attachment not found', detail: 'attachment_id' },
  approvals: { valid: prefixed('apr'), code: 'approval_not_found', message: () => 'approval not found', detail: 'approval_id' },
  inputs: { valid: prefixed('inp'), code: 'input_not_found', message: () => 'input not found', detail: 'input_id' },
  webhooks: { valid: prefixed('wh'), code: 'webhook_not_found', message: () => 'webhook not found', detail: 'webhook_id' },
  automations: { valid: prefixed('auto'), code: 'automation_not_found', message: () => 'automation not found', detail: 'automation_id' },
  invocations: { valid: prefixed('ainv'), code: 'invocation_not_found', message: () => 'automation invocation not found', detail: 'invocation_id' },
  agents: { valid: /^[a-z0-9_-]{1,64}$/, code: 'agent_not_found', message: (id) => `agent "${id}" is not configured`, detail: 'agent_id' },
  secrets: {
    valid: SECRET_NAME_RE,
    code: 'secret_not_found',
    message: () => 'secret not found',
    detail: 'name',
    clientChosen: { field: 'name', rule: SECRET_NAME_RULE },
  },
};
/** A parameter after a collection without a rule of its own: still never anything a query could choke on. */
const FALLBACK: PathIdRule = { valid: /^[A-Za-z0-9_.~-]{1,128}$/, code: 'not_found', message: () => 'no such route', detail: 'id' };

/** The rule of each parameter of a route template, computed once per template. */
const byRoute = new Map<string, Array<{ param: string; rule: PathIdRule }>>();

export function pathIdRules(route: string): Array<{ param: string; rule: PathIdRule }> {
  let rules = byRoute.get(route);
  if (!rules) {
    rules = [];
    const segments = route.split('/');
    for (let i = 1; i < segments.length; i++) {
      if (!segments[i].startsWith(':')) continue;
      rules.push({ param: segments[i].slice(1), rule: RULES[segments[i - 1]] ?? FALLBACK });
    }
    byRoute.set(route, rules);
  }
  return rules;
}

/** The 404 (a client-chosen name: the 400) for the first malformed id among a request's path params, or null when all are well-formed. */
export function malformedPathId(route: string, params: Record<string, string | undefined>): DomainError | null {
  for (const { param, rule } of pathIdRules(route)) {
    const id = params[param];
    if (id === undefined || rule.valid.test(id)) continue;
    if (rule.clientChosen) {
      const { field, rule: what } = rule.clientChosen;
      return new DomainError('invalid_request', `${field} ${what}`, { errors: [{ field, message: `${field} ${what}` }] });
    }
    return rule === FALLBACK ? new DomainError('not_found', rule.message(id)) : new DomainError(rule.code, rule.message(id), { [rule.detail]: id });
  }
  return null;
}

/** Global guard, after AuthGuard (an unauthenticated caller gets its 401 first): applies the rule above. */
@Injectable()
export class PathIdGuard implements CanActivate {
  canActivate(ctx: ExecutionContext): boolean {
    const req = ctx.switchToHttp().getRequest<FastifyRequest>();
    const route = req.routeOptions?.url;
    if (!route || !route.includes(':')) return true;
    const problem = malformedPathId(route, (req.params ?? {}) as Record<string, string>);
    if (problem) throw problem;
    return true;
  }
}
