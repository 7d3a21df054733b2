import { createHash } from 'node:crypto';
import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfig, DEFAULT_DEV_KEY } from '../config/app-config';
import { newId } from '../ids/ids';
import { Principal } from './principal';

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
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
      this.logger.warn(`API_KEYS is not set: using the development key "${key}" (tenant_dev / user_dev / admin). Set API_KEYS in production.`);
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

  /** The principal for a raw key, or null when it is unknown. */
  async authenticate(rawKey: string): Promise<Principal | null> {
    const hash = hashApiKey(rawKey);
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
