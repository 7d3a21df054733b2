import { Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Principal } from '../../../common/auth/principal';
import { AppConfig } from '../../../common/config/app-config';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { DomainError } from '../../../common/errors/domain-error';
import { toErrorResponse } from '../../../common/errors/error-envelope';
import { fingerprintOf, isStorableError, isValidIdempotencyKey, scopeOf } from '../domain/fingerprint';
import { IdempotencyStore, StoredResponse } from '../domain/idempotency.store';

/** What an operation answers: status, JSON body, extra headers. */
export interface HttpOutcome {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

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
  ) {}

  async execute(req: Req, reply: FastifyReply, options: IdempotencyOptions, op: () => Promise<HttpOutcome | DeferredOutcome>): Promise<void> {
    const header = req.headers['idempotency-key'];
    const key = Array.isArray(header) ? header[0] : header;
    if (key === undefined || key === '') {
      if (options.required) throw new DomainError('idempotency_key_required', 'this operation requires an Idempotency-Key header');
      const outcome = await this.uow.run(op);
      const final = isDeferred(outcome) ? await this.finalizeSafely(outcome) : outcome;
      return this.send(reply, this.toStored(final), false);
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
    const claim = await this.store.claim(scope, fingerprint, CLAIM_LOCK_MS, ttlMs);
    switch (claim.kind) {
      case 'replay':
        return this.send(reply, claim.response, true);
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

    let outcome: HttpOutcome | DeferredOutcome;
    try {
      outcome = await this.uow.run(async () => {
        const out = await op();
        if (isDeferred(out)) await this.store.complete(claim.recordId, this.toStored(out), 'committed', out.holdMs);
        else await this.store.complete(claim.recordId, this.toStored(out), 'completed');
        return out;
      });
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
    if (!isDeferred(outcome)) return this.send(reply, this.toStored(outcome), false);
    const final = await this.finalizeSafely(outcome);
    const stored = this.toStored(final);
    await this.store.complete(claim.recordId, stored, 'completed').catch(() => undefined);
    return this.send(reply, stored, false);
  }

  private async finalizeSafely(outcome: DeferredOutcome): Promise<HttpOutcome> {
    try {
      return await outcome.finalize();
    } catch {
      return { status: outcome.status, body: outcome.body, headers: outcome.headers };
    }
  }

  private toStored(out: HttpOutcome): StoredResponse {
    return { status: out.status, body: out.body === undefined ? null : JSON.stringify(out.body), headers: out.headers ?? {} };
  }

  private send(reply: FastifyReply, r: StoredResponse, replayed: boolean): void {
    reply.status(r.status).headers(r.headers);
    if (replayed) reply.header('idempotent-replayed', 'true');
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
