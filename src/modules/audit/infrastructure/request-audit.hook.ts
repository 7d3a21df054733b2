import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost, ModuleRef } from '@nestjs/core';
import { QueryBus } from '@nestjs/cqrs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuthedRequest } from '../../../common/auth/auth.decorators';
import { ApiKeysService } from '../../../common/auth/api-keys.service';
import type { Principal } from '../../../common/auth/principal';
import { GetRunOwnerQuery } from '../../events/application/get-run-owner.query';
import { describeRequest, isAuditedRequest, needsRunSessionLookup, notedAuditSession } from '../application/describe-request';
import { NewAuditRecord } from '../domain/audit-record';
import { AuditTrail } from '../domain/audit-trail';
import { RequestAuditWriter } from '../../../common/audit/request-audit-writer';
import { auditWithholdsBody, notedAuditResult } from '../../../common/audit/audit-notes';
import type { BatchWrite } from '../../../common/database/unit-of-work';
import { routeOf } from '../../../common/http/route-path';
import { SecretScrubber } from '../../../common/secrets/secret-scrubber';
import { RunSecretValuesQuery } from '../../secrets/application/queries/run-secret-values/run-secret-values.query';

/**
 * Records every state-changing request (POST/PUT/PATCH/DELETE on `/v1/*`) in the audit trail,
 * with one Fastify `onSend` hook for all routes, errors included.
 *
 * When: after the response is decided (final status and body known: the handler, the guard or
 * the error filter has produced it) and before its bytes go out, as one INSERT into the audit
 * outbox (durable at once; chained into the tenant's hash chain by the outbox drainer a few ms
 * later, and every read of the trail chains what is queued first). So an admin who got a
 * response can already read its audit record, and a failed or rejected
 * request (409, 400, 403, 404 ...) is recorded exactly like a successful one, which a write
 * inside the command's transaction could not do (a failed command rolls back). The price: a
 * crash between the command's commit and this write loses the request record (the run events,
 * written inside the event store's transaction, are never lost that way), and an audit write
 * that fails is logged but does not turn an already committed change into an error response.
 * A request turned away before the auth guard ran (a body the parser refused: malformed, too
 * deep, too large, a wrong content type) is recorded too, as the caller its API key names; requests
 * without a known key (no tenant) and rate-limited ones (refused before they reach the service;
 * recording a flood would turn it into writes) are not.
 *
 * A successful idempotent POST writes its record with the change instead (`writeFor`, called by
 * IdempotentExecutor inside the statement that stores the response): the same record, one round
 * trip fewer, and never lost to a crash after the commit. The hook then skips that request.
 *
 * Session: from the route, the response body (`session_id`) or what the handler noted
 * (`noteAuditSession`); a request on a run that names none of these (an error, a replay) looks
 * the run's session up as the caller, so filtering the trail by session finds it.
 *
 * A route whose body carries a secret (`AUDIT_WITHHOLDS_BODY`) is recorded without its body; what
 * a handler noted with `noteAuditResult` (a secret's name and version) is recorded as `data.result`.
 */
@Injectable()
export class RequestAuditHook extends RequestAuditWriter implements OnModuleInit {
  private readonly logger = new Logger('Audit');
  /** Requests whose record their operation's statement already wrote (`writeFor`). */
  private readonly done = new WeakSet<object>();

  private keys: ApiKeysService | undefined;

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly trail: AuditTrail,
    private readonly queries: QueryBus,
    private readonly moduleRef: ModuleRef,
  ) {
    super();
  }

  onModuleInit(): void {
    const adapter = this.adapterHost.httpAdapter;
    if (!adapter) return;
    const fastify = adapter.getInstance<FastifyInstance>();
    fastify.addHook('onSend', async (req: FastifyRequest, reply: FastifyReply, payload: unknown) => {
      await this.record(req as AuthedRequest, reply, payload);
      return payload;
    });
  }

  writeFor(req: FastifyRequest, status: number, body: string | null): BatchWrite | null {
    const principal = (req as AuthedRequest).principal;
    if (!principal || !isAuditedRequest(req.method, routeOf(req))) return null;
    const response = parseJson(body);
    const record = this.describe(req as AuthedRequest, principal, status, response, false);
    // A record that needs a read first (the run's session; a body that may carry a tool's result,
    // scrubbed of the run's secrets) cannot ride on the statement: it is written right after, by
    // itself (a streamed answer - AG-UI - never reaches the onSend hook).
    if (needsRunSessionLookup(record) || scrubScope(record, req, response)) {
      this.done.add(req);
      void this.complete(req, principal, record, response).catch((err: unknown) => this.logger.error(`audit record of ${req.method} ${req.url} [${req.id}] not written: ${(err as Error).message}`));
      return null;
    }
    return this.trail.enqueueWrite([record]);
  }

  recorded(req: FastifyRequest): void {
    this.done.add(req);
  }

  /** The reads a record needs (its run's session, the scrubbing of its body), then its write. */
  private async complete(req: FastifyRequest, principal: Principal, record: NewAuditRecord, response: unknown): Promise<void> {
    if (needsRunSessionLookup(record)) record.sessionId = await this.sessionOfRun(principal, record.runId!);
    await this.scrubBody(record, req, response);
    await this.trail.enqueue([record]);
  }

  private describe(req: AuthedRequest, principal: Principal, status: number, response: unknown, replayed: boolean): NewAuditRecord {
    const header = req.headers['idempotency-key'];
    return describeRequest({
      principal,
      method: req.method,
      url: req.url,
      route: routeOf(req),
      params: (req.params ?? {}) as Record<string, string>,
      query: (req.query ?? {}) as Record<string, unknown>,
      body: isJsonRequest(req) ? req.body : null,
      requestId: String(req.id),
      idempotencyKey: typeof header === 'string' ? header : null,
      status,
      response,
      replayed,
      sessionId: notedAuditSession(req),
      bodyWithheld: auditWithholdsBody(req),
      result: notedAuditResult(req),
    });
  }

  private async record(req: AuthedRequest, reply: FastifyReply, payload: unknown): Promise<void> {
    if (this.done.has(req) || !isAuditedRequest(req.method, routeOf(req))) return;
    try {
      const principal = req.principal ?? (await this.callerOfRejected(req, reply.statusCode));
      if (!principal) return;
      const response = parseJson(payload);
      const record = this.describe(req, principal, reply.statusCode, response, reply.getHeader('idempotent-replayed') === 'true');
      await this.complete(req, principal, record, response);
    } catch (err) {
      this.logger.error(`audit record of ${req.method} ${req.url} [${req.id}] not written: ${(err as Error).message}`);
    }
  }

  /**
   * The scrubbing rule for the trail: a request body that hands a run a tool's result (a callback,
   * client tool outputs, an approval's reason, an `ask_user` answer, the compatible surfaces'
   * inputs) is recorded with every secret value the run (or the session's runs) resolved masked.
   */
  private async scrubBody(record: NewAuditRecord, req: FastifyRequest, response: unknown): Promise<void> {
    const scope = scrubScope(record, req, response);
    if (!scope) return;
    const request = record.data.request as { body?: unknown };
    const values = await this.queries.execute(new RunSecretValuesQuery(record.tenantId, scope.runIds, scope.sessionIds));
    if (values.length) request.body = new SecretScrubber(values).json(request.body);
  }

  /**
   * The caller of a request that was answered before the auth guard ran (its body was refused
   * while parsing), by its API key; null without a known key, and for 401 and 429.
   */
  private async callerOfRejected(req: FastifyRequest, status: number): Promise<Principal | null> {
    if (status === 401 || status === 429) return null;
    const keys: ApiKeysService = this.keys ?? (this.keys = this.moduleRef.get(ApiKeysService, { strict: false }) as ApiKeysService);
    return keys.authenticateRequest(req);
  }

  /** The run's session if the caller may see the run; null otherwise (or if the lookup fails). */
  private async sessionOfRun(principal: Principal, runId: string): Promise<string | null> {
    try {
      return (await this.queries.execute(new GetRunOwnerQuery(principal, runId))).sessionId;
    } catch {
      return null;
    }
  }
}

function isJsonRequest(req: FastifyRequest): boolean {
  const type = req.headers['content-type'];
  return typeof type === 'string' && /^application\/([a-z0-9.+-]*\+)?json\b/i.test(type);
}

function parseJson(payload: unknown): unknown {
  const text = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : null;
  if (!text || text.length > 1_048_576) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/**
 * Which runs' (or sessions') resolved secrets a request's recorded body must be scrubbed of; null
 * for a request whose body hands no run anything from outside (a new run's input, an agent, ...):
 * those cost no read.
 */
function scrubScope(record: NewAuditRecord, req: FastifyRequest, response: unknown): { runIds: string[]; sessionIds: string[] } | null {
  const body = (record.data.request as { body?: unknown } | undefined)?.body;
  if (body === null || body === undefined || req.method.toUpperCase() !== 'POST') return null;
  const route = routeOf(req) ?? '';
  const params = (req.params ?? {}) as Record<string, string>;
  // Callbacks, tool outputs, approval decisions (with a reason), cancels: on a run.
  if (route.startsWith('/v1/runs/:id/') && record.runId) return { runIds: [record.runId], sessionIds: [] };
  // An input that answered the active run's ask_user: that run's.
  if (route === '/v1/sessions/:id/runs') {
    const ok = response as { answered?: unknown; run_id?: unknown } | null;
    return ok && ok.answered === true && typeof ok.run_id === 'string' ? { runIds: [ok.run_id], sessionIds: [] } : null;
  }
  // The compatible surfaces' inputs (approval results, client tool results) name the session.
  if (route.startsWith('/openai/v1/agents/sessions/:id') && typeof params.id === 'string') return { runIds: [], sessionIds: [params.id] };
  if (route.startsWith('/ag-ui/')) {
    // Only a request that hands the thread's run tool results or approval answers: a plain user message costs no read.
    const b = body as { threadId?: unknown; messages?: unknown; resume?: unknown };
    const handsResults = (Array.isArray(b.resume) && b.resume.length > 0) || (Array.isArray(b.messages) && b.messages.some((m) => (m as { role?: unknown })?.role === 'tool'));
    return handsResults && typeof b.threadId === 'string' ? { runIds: [], sessionIds: [b.threadId] } : null;
  }
  return null;
}
