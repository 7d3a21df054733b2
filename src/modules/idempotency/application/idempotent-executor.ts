import { Injectable, Optional } from '@nestjs/common';
import { RequestAuditWriter } from '../../../common/audit/request-audit-writer';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Principal } from '../../../common/auth/principal';
import { AppConfig } from '../../../common/config/app-config';
import { BatchWrite, UnitOfWork } from '../../../common/database/unit-of-work';
import { DomainError } from '../../../common/errors/domain-error';
import { toErrorResponse } from '../../../common/errors/error-envelope';
import { fingerprintOf, isStorableError, isValidIdempotencyKey, scopeOf } from '../domain/fingerprint';
import { errorCodeInBody, noteErrorCode } from '../../../common/errors/response-error-code';
import { IdempotencyStore, SecretRef, StoredResponse } from '../domain/idempotency.store';

/** What an operation answers: status, JSON body, extra headers. */
export interface HttpOutcome {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
  /**
   * With `IdempotencyOptions.secret`, when the body carries the secret: what identifies it (e.g.
   * the endpoint id and the secret's version), stored in its place for a replay to resolve. Never
   * the secret, nor anything it can be derived from.
   */
  secretRef?: SecretRef;
}

/**
 * A response that carries a secret shown once (a webhook signing secret). Its key's record keeps
 * the body with `field` set to null plus the outcome's `secretRef`, never the secret; a replay
 * asks `rehydrate` for the secret the reference names.
 */
export interface SecretInResponse {
  /** The top-level body field that holds the secret. */
  field: string;
  /**
   * On a replay: the secret `ref` names when it is still the current one (decrypted from where the
   * owning module keeps it sealed), else why not (e.g. `rotated`, `deleted`): the replay is then the
   * stored body, `field` null, with header `Idempotent-Secret-Withheld: <reason>`, never another secret.
   */
  rehydrate: (ref: SecretRef) => Promise<{ secret: string } | { withheld: string }>;
}

/** The replay header saying why the stored response's secret was not filled back in. */
export const SECRET_WITHHELD_HEADER = 'idempotent-secret-withheld';

/**
 * An outcome that is only provisional when the transaction commits (e.g. a sync run's 202
 * receipt): `finalize` runs after the commit, outside any transaction, and gives the response
 * the client actually gets (and that is stored). `holdMs` bounds how long a retry sees
 * `idempotency_in_progress` before the provisional response is replayed instead.
 */
export interface DeferredOutcome extends HttpOutcome {
  finalize: () => Promise<HttpOutcome>;
  holdMs: number;
}

export interface IdempotencyOptions {
  /** Missing `Idempotency-Key` is 400 `idempotency_key_required`. */
  required?: boolean;
  /** Fingerprint of a non-JSON request (multipart: file bytes and fields); default: the JSON body. */
  fingerprint?: string;
  /**
   * The operation writes only with `UnitOfWork.write` (no `run()` or `statement()`) and answers a
   * final response (never a DeferredOutcome): it runs as a batch, and with a fresh key its writes,
   * the key's record and the request's audit record are ONE statement (no claim, no BEGIN/COMMIT
   * round trips); a key that is taken, or an operation that fails, goes the usual way (claim,
   * then replay or run again). Otherwise it runs in a transaction, which the stored response and
   * the audit record close with one statement.
   */
  batch?: boolean;
  /** The response carries a secret: it is not stored, a replay fills it back in (see `SecretInResponse`). */
  secret?: SecretInResponse;
  /**
   * A replayed 2xx answers what the stored body describes as it is NOW (an input's receipt:
   * CONTRACT section 7): given the stored body, the body to send and headers that replace stored ones.
   */
  refresh?: (body: unknown) => Promise<{ body: unknown; headers?: Record<string, string> }>;
}

type Req = FastifyRequest & { principal?: Principal };

const CLAIM_LOCK_MS = 30_000;

/**
 * CONTRACT section 3 for one POST: claim the key atomically, run the operation in ONE
 * transaction that also stores the response, replay byte-for-byte on a retry.
 * The operation runs inside `uow.run`, so repositories join the same transaction.
 */
@Injectable()
export class IdempotentExecutor {
  constructor(
    private readonly store: IdempotencyStore,
    private readonly uow: UnitOfWork,
    private readonly config: AppConfig,
    @Optional() private readonly audit?: RequestAuditWriter,
  ) {}

  async execute(req: Req, reply: FastifyReply, options: IdempotencyOptions, op: () => Promise<HttpOutcome | DeferredOutcome>): Promise<void> {
    const header = req.headers['idempotency-key'];
    const key = Array.isArray(header) ? header[0] : header;
    // A header that is present but empty (`Idempotency-Key: ""`) is not "no key": it is a key
    // outside 1..255 printable ASCII, 400 invalid_request below, on every route alike.
    if (key === undefined) {
      if (options.required) throw new DomainError('idempotency_key_required', 'this operation requires an Idempotency-Key header');
      const { outcome, sent } = await this.unit(req, options, op, () => null);
      return this.send(reply, isDeferred(outcome) ? this.toStored(await this.finalizeSafely(outcome)) : sent, false);
    }
    if (!isValidIdempotencyKey(key)) {
      throw new DomainError('invalid_request', 'Idempotency-Key must be 1 to 255 printable ASCII characters', {
        errors: [{ field: 'Idempotency-Key', message: 'must be 1..255 printable ASCII characters' }],
      });
    }
    const principal = req.principal!;
    const scope = {
      tenantId: principal.tenantId,
      subjectId: principal.subjectId,
      scope: scopeOf(req.method, req.routeOptions.url ?? req.url, (req.params ?? {}) as Record<string, string>),
      key,
    };
    const fingerprint = options.fingerprint ?? fingerprintOf(req.body);
    const ttlMs = this.config.idempotencyTtlHours * 3_600_000;
    if (options.batch) {
      // A fresh key (the usual case): the operation's writes, the key's record (completed at once,
      // never in progress) and the audit record are ONE statement; no claim round trip.
      try {
        const { sent } = await this.unit(req, options, op, (out, response) => {
          if (isDeferred(out)) throw new Error('a batched operation cannot answer a provisional response');
          return this.store.insertCompleted(scope, fingerprint, response, ttlMs);
        });
        return this.send(reply, sent, false);
      } catch {
        // Nothing was written. The key is taken (a retry: replay, conflict or in progress), or the
        // operation failed, and then what its key already holds decides (a replay wins over a new
        // error): both go the usual way below, which claims the key first.
      }
    }
    const claim = await this.store.claim(scope, fingerprint, CLAIM_LOCK_MS, ttlMs);
    switch (claim.kind) {
      case 'replay':
        return this.send(reply, await this.replayed(claim.response, options), true);
      case 'conflict':
        throw new DomainError('idempotency_conflict', 'this Idempotency-Key was used with a different request body', { idempotency_key: key });
      case 'in_progress':
        throw new DomainError('idempotency_in_progress', 'a request with this Idempotency-Key is still being processed', {
          idempotency_key: key,
          retry_after_ms: 1000,
        });
      case 'claimed':
        break;
    }

    let done: { outcome: HttpOutcome | DeferredOutcome; sent: StoredResponse };
    try {
      // After a failed batch, a transaction: an operation may need one to decide (a run that
      // omitted `concurrency` in a session whose default is steer reads the active run first).
      done = await this.unit(req, { ...options, batch: false }, op, (out, response) =>
        isDeferred(out) ? this.store.completion(claim.recordId, response, 'committed', out.holdMs) : this.store.completion(claim.recordId, response, 'completed'),
      );
    } catch (err) {
      const res = toErrorResponse(err, String(req.id));
      const e = res.body.error;
      if (isStorableError(res.status, e.code, e.retryable)) {
        await this.store.complete(claim.recordId, { status: res.status, body: JSON.stringify(res.body), headers: res.headers }, 'completed');
      } else {
        await this.store.release(claim.recordId).catch(() => undefined);
      }
      throw err;
    }
    const { outcome } = done;
    if (!isDeferred(outcome)) return this.send(reply, done.sent, false);
    const final = await this.finalizeSafely(outcome);
    const stored = this.toStored(final);
    await this.store.complete(claim.recordId, stored, 'completed').catch(() => undefined);
    return this.send(reply, stored, false);
  }

  /**
   * Runs `op` as one unit of work (a batch or a transaction, see `IdempotencyOptions.batch`) that
   * ends with ONE statement holding `closing(outcome)` (the stored response) and the request's
   * audit record (a final response only: a provisional one is recorded when it is sent). `sent`
   * is what the client gets; what is stored and audited is `stored` (without a secret).
   */
  private async unit(
    req: Req,
    options: IdempotencyOptions,
    op: () => Promise<HttpOutcome | DeferredOutcome>,
    closing: (out: HttpOutcome | DeferredOutcome, response: StoredResponse) => BatchWrite | null,
  ): Promise<{ outcome: HttpOutcome | DeferredOutcome; sent: StoredResponse }> {
    let audited = false;
    const body = async () => {
      const outcome = await op();
      if (options.secret && isDeferred(outcome)) throw new Error('a response with a secret cannot be provisional');
      const sent = this.toStored(outcome);
      const stored = options.secret ? this.withoutSecret(outcome, sent, options.secret) : sent;
      const writes: BatchWrite[] = [];
      const response = closing(outcome, stored);
      if (response) writes.push(response);
      if (!isDeferred(outcome) && this.audit) {
        const record = this.audit.writeFor(req, stored.status, stored.body);
        if (record) writes.push(record);
        audited = record !== null;
      }
      await this.uow.write(...writes);
      return { outcome, sent };
    };
    const done = options.batch ? await this.uow.batch(body) : await this.uow.run(body);
    if (audited) this.audit!.recorded(req);
    return done;
  }

  private async finalizeSafely(outcome: DeferredOutcome): Promise<HttpOutcome> {
    try {
      return await outcome.finalize();
    } catch {
      return { status: outcome.status, body: outcome.body, headers: outcome.headers };
    }
  }

  /** The response to store for `sent`: its secret (if it carries one) replaced by null, and the outcome's reference to it. */
  private withoutSecret(out: HttpOutcome, sent: StoredResponse, secret: SecretInResponse): StoredResponse {
    const body = out.body as Record<string, unknown> | null | undefined;
    if (body === null || typeof body !== 'object' || body[secret.field] === undefined || body[secret.field] === null) return sent;
    if (!out.secretRef) throw new Error(`a response carrying "${secret.field}" needs a secretRef: the secret itself is never stored`);
    // The spread keeps the field where it was, so a replay that fills it back in is byte-for-byte the original.
    return { ...sent, body: JSON.stringify({ ...body, [secret.field]: null }), secretRef: out.secretRef };
  }

  /** A stored response as a replay sends it: a secret it referred to filled back in, if still current. */
  private async replayed(r: StoredResponse, options: IdempotencyOptions): Promise<StoredResponse> {
    if (options.refresh && r.body !== null && r.status < 300) {
      const now = await options.refresh(JSON.parse(r.body));
      r = { ...r, body: JSON.stringify(now.body), headers: { ...r.headers, ...now.headers } };
    }
    if (!r.secretRef || r.body === null) return r;
    if (!options.secret) throw new Error('a stored response refers to a secret, but the route resolves none');
    const resolved = await options.secret.rehydrate(r.secretRef);
    if ('withheld' in resolved) return { ...r, headers: { ...r.headers, [SECRET_WITHHELD_HEADER]: resolved.withheld } };
    const body = JSON.parse(r.body) as Record<string, unknown>;
    body[options.secret.field] = resolved.secret;
    return { status: r.status, headers: r.headers, body: JSON.stringify(body) };
  }

  private toStored(out: HttpOutcome): StoredResponse {
    return { status: out.status, body: out.body === undefined ? null : JSON.stringify(out.body), headers: out.headers ?? {} };
  }

  private send(reply: FastifyReply, r: StoredResponse, replayed: boolean): void {
    reply.status(r.status).headers(r.headers);
    if (replayed) reply.header('idempotent-replayed', 'true');
    if (replayed && r.status >= 400 && r.body !== null) {
      // A replayed error is the original response, byte-for-byte: its X-Request-Id is the one its
      // envelope names (the envelope rule: X-Request-Id == error.request_id).
      try {
        const rid = (JSON.parse(r.body) as { error?: { request_id?: unknown } })?.error?.request_id;
        if (typeof rid === 'string') reply.header('x-request-id', rid);
      } catch {
        // not JSON: keep this request's id
      }
    }
    if (r.status >= 400) {
      const code = errorCodeInBody(r.body);
      if (code) noteErrorCode(reply, code);
    }
    if (r.body === null) {
      reply.send();
      return;
    }
    reply.type('application/json').send(r.body);
  }
}

function isDeferred(o: HttpOutcome | DeferredOutcome): o is DeferredOutcome {
  return typeof (o as DeferredOutcome).finalize === 'function';
}
