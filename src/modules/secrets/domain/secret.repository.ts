import type { SortOrder } from '../../../common/http/pagination';
import type { SecretMetadata } from './secret';

export interface Page<T> {
  items: T[];
  hasMore: boolean;
}

/** A live secret's sealed value, as the cipher needs it to open it. */
export interface SealedSecret {
  name: string;
  version: number;
  ciphertext: Buffer;
}

/** Port: the tenants' secrets (every method is scoped to one tenant; deleted secrets are never returned). */
export abstract class SecretRepository {
  /** Ordered by name; `after` is a name (the page starts after it). */
  abstract list(tenantId: string, page: { after?: string; limit: number; order: SortOrder }): Promise<Page<SecretMetadata>>;
  abstract find(tenantId: string, name: string): Promise<SecretMetadata | null>;
  /** The last version written under the name (deleted or not), locking its row for the transaction; 0 when it was never written. */
  abstract lastVersion(tenantId: string, name: string): Promise<number>;
  /**
   * Writes `version` (sealed for it) if the name's last version is still `expectedLast`; null
   * when another write came first (the caller reads again and retries).
   */
  abstract write(tenantId: string, name: string, expectedLast: number, version: number, ciphertext: Buffer): Promise<SecretMetadata | null>;
  /** Deletes the live secret (its ciphertext is erased); the deleted version, or null when there was none. */
  abstract delete(tenantId: string, name: string): Promise<number | null>;
  /** The live secrets among `names`. */
  abstract sealed(tenantId: string, names: string[]): Promise<SealedSecret[]>;
  /** Records values a run resolved (sealed), once per run, name and value; a repeat refreshes `resolved_at`. */
  abstract recordUses(tenantId: string, run: { runId: string; sessionId: string }, uses: SealedUse[]): Promise<void>;
  /** The sealed values the runs `runIds`, or any run of the sessions `sessionIds` (of `tenantId`), resolved. */
  abstract usesOf(tenantId: string, of: { runIds: string[]; sessionIds: string[] }): Promise<Array<SealedUse & { runId: string }>>;
  /** Forgets uses last resolved before `before`. */
  abstract pruneUses(before: Date): Promise<number>;
}

/** One value a run resolved, sealed for that run and name. */
export interface SealedUse {
  name: string;
  valueKey: string;
  ciphertext: Buffer;
}
