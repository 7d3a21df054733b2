import type { BatchWrite } from '../../../common/database/unit-of-work';

/**
 * A stored HTTP response. `body` is the exact JSON text sent (null for bodyless statuses), except
 * that a secret the response carried is stored as null (`IdempotencyOptions.secret`): `secretRef`
 * then names it (never the secret, nor anything it can be derived from) for the replay to fill in.
 */
export interface StoredResponse {
  status: number;
  body: string | null;
  headers: Record<string, string>;
  secretRef?: SecretRef | null;
}

/** What identifies a secret without revealing it (e.g. a webhook endpoint id and the secret's version). */
export type SecretRef = Record<string, string | number>;

export interface IdempotencyScope {
  tenantId: string;
  subjectId: string;
  scope: string;
  key: string;
}

export type ClaimResult =
  | { kind: 'claimed'; recordId: string }
  | { kind: 'replay'; response: StoredResponse }
  | { kind: 'conflict' }
  | { kind: 'in_progress' };

/** Port: idempotency records. `claim` is atomic (a unique constraint, never read-then-write). */
export abstract class IdempotencyStore {
  abstract claim(scope: IdempotencyScope, fingerprint: string, lockMs: number, ttlMs: number): Promise<ClaimResult>;
  /** Inside the operation's transaction: the response is final (`completed`) or provisional (`committed`). */
  abstract complete(recordId: string, response: StoredResponse, state: 'completed' | 'committed', lockMs?: number): Promise<void>;
  /**
   * A fresh key's record, already completed with `response`, as a write for the operation's own
   * statement (`UnitOfWork.write`; its condition is checked first): if the key is taken (any
   * record, expired or not), the statement fails with `IdempotencyKeyTaken` and writes nothing.
   */
  abstract insertCompleted(scope: IdempotencyScope, fingerprint: string, response: StoredResponse, ttlMs: number): BatchWrite;
  /** `complete` as a write for the operation's own statement (`UnitOfWork.write`). */
  abstract completion(recordId: string, response: StoredResponse, state: 'completed' | 'committed', lockMs?: number): BatchWrite;
  /** Forget a claim whose outcome is not stored, so a retry may succeed. */
  abstract release(recordId: string): Promise<void>;
  abstract purgeExpired(limit: number): Promise<number>;
}

/** `insertCompleted` found the key taken: nothing was written; claim it the usual way. */
export class IdempotencyKeyTaken extends Error {
  constructor() {
    super('the idempotency key is taken');
  }
}
