import { hash } from 'node:crypto';
import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfig, DEFAULT_DEV_KEY, isLoopbackHost } from '../config/app-config';
import { newId } from '../ids/ids';
import { Principal } from './principal';

/** SHA-256 (hex) of a raw key. One-shot `crypto.hash`: no Hash object, half the cost of createHash. */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

const KEY_HASH = Symbol('apiKeyHash');
type WithKeyHash = { [KEY_HASH]?: { raw: string; hash: string } };

/**
 * `hashApiKey(rawKey)`, computed once per request: the rate limit (onRequest) and the auth guard
 * both need the hash of the request's key (bench B4: hashing was ~3% of a cheap request's CPU).
 */
export function requestKeyHash(req: object, rawKey: string): string {
  const memo = (req as WithKeyHash)[KEY_HASH];
  if (memo?.raw === rawKey) return memo.hash;
  const h = hashApiKey(rawKey);
  (req as WithKeyHash)[KEY_HASH] = { raw: rawKey, hash: h };
  return h;
}

interface CacheEntry {
  principal: Principal | null;
  until: number;
}

/**
 * API keys come from `API_KEYS`; at start-up they are written to `api_keys` as SHA-256 hashes
 * (the raw key is never stored) and that list becomes authoritative: keys no longer configured
 * stop working. Lookups hit the table through a short in-memory cache.
 */
@Injectable()
export class ApiKeysService implements OnApplicationBootstrap {
  private readonly logger = new Logger('ApiKeys');
  private readonly cache = new Map<string, CacheEntry>();

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
    this.cache.clear();
  }

  /** The principal for a key given by its hash (`hashApiKey`), or null when it is unknown. */
  async authenticateHash(hash: string): Promise<Principal | null> {
    const now = Date.now();
    const hit = this.cache.get(hash);
    if (hit && hit.until > now) return hit.principal;
    const rows: Array<{ id: string; tenant_id: string; subject_id: string; role: 'member' | 'admin' }> = await this.dataSource.query(
      `SELECT id, tenant_id, subject_id, role FROM api_keys WHERE key_hash = $1`,
      [hash],
    );
    const row = rows[0];
    const principal: Principal | null = row ? { keyId: row.id, tenantId: row.tenant_id, subjectId: row.subject_id, role: row.role } : null;
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(hash, { principal, until: now + (principal ? 60_000 : 5_000) });
    return principal;
  }
}
