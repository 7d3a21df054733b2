import { hash } from 'node:crypto';
import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfig, DEFAULT_DEV_KEY, isLoopbackHost } from '../config/app-config';
import { newId } from '../ids/ids';
import { Principal } from './principal';

/** SHA-256 (hex) of a raw key. One-shot `crypto.hash`: no Hash object, half the cost of createHash. */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

/** `Authorization: Bearer <key>`; anything else is no key at all. */
const BEARER = /^Bearer\s+([A-Za-z0-9_-]{1,512})\s*$/i;

/** How often a node re-reads `api_keys` (keys another node's API_KEYS added or removed). */
export const API_KEYS_REFRESH_MS = 30_000;

const REQUEST_PRINCIPAL = Symbol('requestPrincipal');
type WithPrincipal = { [REQUEST_PRINCIPAL]?: Principal | null; headers: Record<string, string | string[] | undefined> };

/** The same identity for a key on every node and database: a prefix of its hash (never the key). */
const identities = new WeakMap<Principal, string>();

/**
 * The key's identity for limits shared between nodes (rate limit, SSE streams): the first 128
 * bits of its SHA-256, the same on every node whatever database row it has. Only for principals
 * that `ApiKeysService` resolved; others fall back to their key id.
 */
export function keyIdentityOf(principal: Principal): string {
  return identities.get(principal) ?? principal.keyId;
}

export interface ApiKeyRow {
  id: string;
  key_hash: string;
  tenant_id: string;
  subject_id: string;
  role: 'member' | 'admin';
}

/** Every key of `api_keys`, by hash: authenticating is a map lookup. */
export class ApiKeyTable {
  static readonly empty = new ApiKeyTable([]);
  private readonly byHash = new Map<string, Principal>();

  constructor(rows: ApiKeyRow[]) {
    for (const row of rows) {
      const principal: Principal = { keyId: row.id, tenantId: row.tenant_id, subjectId: row.subject_id, role: row.role };
      identities.set(principal, row.key_hash.slice(0, 32));
      this.byHash.set(row.key_hash, principal);
    }
  }

  get size(): number {
    return this.byHash.size;
  }

  /** The principal for a key given by its hash (`hashApiKey`), or null when it is unknown. */
  principalOfHash(hash: string): Principal | null {
    return this.byHash.get(hash) ?? null;
  }

  /**
   * The principal of the request's `Authorization: Bearer` key, or null (no key, a malformed or
   * an unknown one). Resolved once per request: the rate limit (onRequest) and the auth guard
   * both ask (bench B4: hashing was ~3% of a cheap request's CPU).
   */
  principalOfRequest(req: object): Principal | null {
    const r = req as WithPrincipal;
    const memo = r[REQUEST_PRINCIPAL];
    if (memo !== undefined) return memo;
    const header = r.headers.authorization;
    const match = typeof header === 'string' ? BEARER.exec(header) : null;
    const principal = match ? this.principalOfHash(hashApiKey(match[1])) : null;
    r[REQUEST_PRINCIPAL] = principal;
    return principal;
  }
}

/**
 * API keys come from `API_KEYS`; at start-up they are written to `api_keys` as SHA-256 hashes
 * (the raw key is never stored) and that list becomes authoritative: keys no longer configured
 * stop working. Every node holds the whole (small) table in memory and re-reads it every
 * API_KEYS_REFRESH_MS, so authenticating is a hash and a map lookup: no query per request, and
 * a flood of well-formed unknown keys costs the database nothing and evicts nothing.
 */
@Injectable()
export class ApiKeysService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('ApiKeys');
  private table = ApiKeyTable.empty;
  private refreshTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly config: AppConfig,
    private readonly dataSource: DataSource,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.sync();
    if (this.config.apiKeysFromDefault) {
      const [key] = DEFAULT_DEV_KEY.split(':');
      this.logger.warn(
        `API_KEYS is not set: using the development key "${key}" (tenant_dev / user_dev / admin)` +
          (isLoopbackHost(this.config.host) ? `; listening on ${this.config.host} only. Set API_KEYS to serve other machines.` : '. Set API_KEYS in production.'),
      );
    } else {
      this.logger.log(`${this.config.apiKeys.length} API key(s) configured`);
    }
    this.refreshTimer = setInterval(() => {
      this.reload().catch((err: unknown) => this.logger.warn(`re-reading api_keys failed (the keys known so far stay in use): ${(err as Error).message}`));
    }, API_KEYS_REFRESH_MS);
    this.refreshTimer.unref();
  }

  beforeApplicationShutdown(): void {
    if (this.refreshTimer) clearInterval(this.refreshTimer);
    this.refreshTimer = null;
  }

  async sync(): Promise<void> {
    const hashes: string[] = [];
    await this.dataSource.transaction(async (m) => {
      for (const k of this.config.apiKeys) {
        const hash = hashApiKey(k.key);
        hashes.push(hash);
        await m.query(
          `INSERT INTO api_keys (id, key_hash, tenant_id, subject_id, role) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (key_hash) DO UPDATE SET tenant_id = EXCLUDED.tenant_id, subject_id = EXCLUDED.subject_id, role = EXCLUDED.role`,
          [newId('key'), hash, k.tenantId, k.subjectId, k.role],
        );
      }
      await m.query(`DELETE FROM api_keys WHERE NOT (key_hash = ANY($1::text[]))`, [hashes]);
    });
    await this.reload();
  }

  /** Replaces the in-memory table with what `api_keys` holds now. */
  async reload(): Promise<void> {
    const rows: ApiKeyRow[] = await this.dataSource.query(`SELECT id, key_hash, tenant_id, subject_id, role FROM api_keys`);
    this.table = new ApiKeyTable(rows);
  }

  /** The principal for a key given by its hash (`hashApiKey`), or null when it is unknown. */
  authenticateHash(hash: string): Principal | null {
    return this.table.principalOfHash(hash);
  }

  /** The principal of the request's Bearer key (memoised per request), or null. */
  authenticateRequest(req: object): Principal | null {
    return this.table.principalOfRequest(req);
  }
}
