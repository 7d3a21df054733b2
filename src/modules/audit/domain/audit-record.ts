import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { sanitizeText } from '../../../common/text/unsafe-text';
import { canonicalJson } from '../../idempotency/domain/fingerprint';

/** `prev_hash` of the first record of every tenant's chain. */
export const GENESIS_HASH = '0'.repeat(64);

/** What a caller hands to the trail; position, time (default now) and hashes are assigned by it. */
export interface NewAuditRecord {
  tenantId: string;
  occurredAt?: Date;
  actorSubjectId: string | null;
  /** `member`, `admin`, or `system` for records the service writes on its own (run events). */
  actorRole: string | null;
  actorKeyId: string | null;
  /** E.g. `POST /v1/sessions/:id/archive` for requests, `run_event.tool.completed` for run events. */
  action: string;
  resourceType: string | null;
  resourceId: string | null;
  sessionId: string | null;
  runId: string | null;
  requestId: string | null;
  /** `ok` for a success, else the contract error code. */
  outcome: string | null;
  /** The HTTP status of a request; null for run events. */
  status: number | null;
  /** The unredacted data (request body, event data, ...). */
  data: Record<string, unknown>;
}

/** A stored record: one link of its tenant's chain. */
export interface AuditRecord {
  id: string; // aud_...
  tenantId: string;
  seq: number; // per tenant, from 1, gap-free
  occurredAt: Date;
  actorSubjectId: string | null;
  actorRole: string | null;
  actorKeyId: string | null;
  action: string;
  resourceType: string | null;
  resourceId: string | null;
  sessionId: string | null;
  runId: string | null;
  requestId: string | null;
  outcome: string | null;
  status: number | null;
  data: Record<string, unknown>;
  prevHash: string;
  hash: string;
  /** HMAC-SHA256 of `hash` under AUDIT_HMAC_KEY; null on records chained before macs (seq <= the head's `keyed_until`). */
  mac: string | null;
}

export type AuditRecordBody = Omit<AuditRecord, 'prevHash' | 'hash' | 'mac'>;

/**
 * The canonical form of a record, exactly what is hashed. Anyone verifies a chain from the
 * exported records alone (docs/audit.md, "The canonical record" and the recipe):
 *
 *   canonical = canonical JSON of the object with the 16 keys
 *               id, tenant_id, seq, occurred_at, actor_subject_id, actor_role, actor_key_id,
 *               action, resource_type, resource_id, session_id, run_id, request_id, outcome,
 *               status, data
 *               (the API record without `object`, `prev_hash`, `hash`, `mac`; absent values are null)
 *   hash      = lowercase hex SHA-256 of the UTF-8 bytes of (prev_hash + canonical)
 *   mac       = lowercase hex HMAC-SHA256, keyed with the UTF-8 bytes of AUDIT_HMAC_KEY, of the
 *               UTF-8 bytes of hash (checked by the service: a database writer without the key
 *               cannot rewrite a record and recompute the chain so that it verifies there)
 *
 * Three eras, by `seq` against the head's boundaries (set once by migrations, never moved):
 * seq <= `legacy_until`: SHA-256 hash, no mac (chained before the chain was keyed);
 * `legacy_until` < seq <= `keyed_until`: hash = HMAC-SHA256 of the same bytes, no mac (chained
 * before checkpoints; only the key's holder recomputes it: exported with `hash_alg` `hmac-sha256`);
 * later: SHA-256 hash and the mac.
 *
 * Canonical JSON: `JSON.stringify` of every scalar; object keys sorted by UTF-16 code units at
 * every depth; no whitespace. `seq` and `status` are JSON numbers, `occurred_at` is the RFC 3339
 * UTC string with milliseconds (`2025-01-01T00:00:00.000Z`). The first record of a tenant has
 * `prev_hash` = 64 zeros; record n has `prev_hash` = hash of record n-1.
 */
export function canonicalAuditRecord(r: AuditRecordBody): string {
  return canonicalJson(auditRecordFields(r));
}

/** The 16 hashed fields of a record by their public (snake_case) names: hashed, returned by the API, exported. */
export function auditRecordFields(r: AuditRecordBody) {
  return {
    id: r.id,
    tenant_id: r.tenantId,
    seq: r.seq,
    occurred_at: r.occurredAt.toISOString(),
    actor_subject_id: r.actorSubjectId,
    actor_role: r.actorRole,
    actor_key_id: r.actorKeyId,
    action: r.action,
    resource_type: r.resourceType,
    resource_id: r.resourceId,
    session_id: r.sessionId,
    run_id: r.runId,
    request_id: r.requestId,
    outcome: r.outcome,
    status: r.status,
    data: r.data,
  };
}

/** A record's public hash: SHA-256 of prev_hash + canonical record (anyone can recompute it; the mac and the signed checkpoints make it binding). */
export function auditRecordHash(prevHash: string, record: AuditRecordBody): string {
  return createHash('sha256').update(prevHash + canonicalAuditRecord(record), 'utf8').digest('hex');
}

/** The same formula, under the name the records chained before the chain was keyed (seq <= `legacy_until`) were written with. */
export const legacyAuditHash = auditRecordHash;

/** How a record's `hash` was made (exported as `hash_alg`): `hmac-sha256` only for the keyed era, see `canonicalAuditRecord`. */
export type AuditHashAlg = 'sha256' | 'hmac-sha256';

/** The eras of a tenant's chain (`canonicalAuditRecord`). */
export interface ChainEras {
  legacyUntil: number;
  keyedUntil: number;
}

export function hashAlgOf(seq: number, eras: ChainEras): AuditHashAlg {
  return seq > eras.legacyUntil && seq <= eras.keyedUntil ? 'hmac-sha256' : 'sha256';
}

/**
 * A tenant's chain head as stored in `audit_chain_heads`: the last chained position, the last
 * record of the old unkeyed scheme (0 when the tenant has none) and the tag binding the three.
 */
export interface ChainHead {
  tenantId: string;
  lastSeq: number;
  lastHash: string;
  legacyUntil: number;
  /** The last record whose hash is keyed (and has no mac); fixed by the migration that introduced macs. Not tagged: see that migration. */
  keyedUntil: number;
  /** HMAC over the other fields (`AuditChainKey.headTag`); null only on a head the keyed migration could not tag. */
  tag: string | null;
}

/**
 * The chain's key (`AUDIT_HMAC_KEY`): record hashes and head tags are HMAC-SHA256 with it, so a
 * database writer without the key can neither recompute a rewritten record's hash nor move the
 * head back to an earlier position it holds no tag for.
 */
export class AuditChainKey {
  /** A public fingerprint of the key, for logs (which key a node uses), not a secret. */
  readonly keyId: string;

  constructor(private readonly key: Buffer) {
    this.keyId = this.mac('audit_key_id').slice(0, 16);
  }

  /** `hash` of a record of the keyed era (`legacy_until` < seq <= `keyed_until`). */
  keyedEraHash(prevHash: string, record: AuditRecordBody): string {
    return this.mac(prevHash + canonicalAuditRecord(record));
  }

  /** `mac` of a record chained after the keyed era: HMAC-SHA256 of its hash. */
  recordMac(hash: string): string {
    return this.mac(hash);
  }

  /** `tag` of a head: HMAC over a domain-separated canonical form of tenant, position, last hash and legacy boundary. */
  headTag(head: Omit<ChainHead, 'tag' | 'keyedUntil'>): string {
    return this.mac(
      'audit_chain_head:' +
        canonicalJson({ tenant_id: head.tenantId, last_seq: head.lastSeq, last_hash: head.lastHash, legacy_until: head.legacyUntil }),
    );
  }

  /** Whether the head's tag is this key's tag for it (constant time). */
  headIsAuthentic(head: ChainHead): boolean {
    return head.tag !== null && safeEqualHex(head.tag, this.headTag(head));
  }

  /** The hash and mac a record must carry in its era. */
  expected(prevHash: string, record: AuditRecordBody, eras: ChainEras): { hash: string; mac: string | null } {
    if (hashAlgOf(record.seq, eras) === 'hmac-sha256') return { hash: this.keyedEraHash(prevHash, record), mac: null };
    const hash = auditRecordHash(prevHash, record);
    return { hash, mac: record.seq <= eras.legacyUntil ? null : this.recordMac(hash) };
  }

  private mac(text: string): string {
    return createHmac('sha256', this.key).update(text, 'utf8').digest('hex');
  }
}

function safeEqualHex(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Makes a value safe to store as jsonb and to hash identically before and after the round trip:
 * PostgreSQL rejects NUL characters and lone surrogates in jsonb strings, so those become U+FFFD;
 * non-JSON values (undefined in objects, functions) are dropped as JSON.stringify would drop them.
 */
export function jsonSafe(value: unknown): unknown {
  const parsed: unknown = JSON.parse(JSON.stringify(value ?? null) ?? 'null');
  return clean(parsed);
}

function clean(v: unknown): unknown {
  if (typeof v === 'string') return sanitizeText(v);
  if (Array.isArray(v)) return v.map(clean);
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      // defineProperty: a "__proto__" key stays an own data property.
      Object.defineProperty(out, sanitizeText(k), { value: clean(x), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return v;
}

/** Why a record fails verification. */
export type ChainBreakReason =
  | 'hash_mismatch'
  | 'mac_mismatch'
  | 'prev_hash_mismatch'
  | 'seq_gap'
  | 'chain_head_mismatch'
  | 'checkpoint_mismatch'
  | 'checkpoint_signature_invalid'
  | 'chain_start_unanchored';

export interface ChainBreak {
  id: string | null;
  seq: number;
  reason: ChainBreakReason;
}

/**
 * Checks one batch of consecutive records against the link before it: `seq` follows, `prev_hash`
 * is the previous hash, `hash` recomputes and `mac` is the key's (as the record's era has them).
 * Returns the first break, or the new link (last seq and hash) to continue from.
 */
export function verifyBatch(
  key: AuditChainKey,
  eras: ChainEras,
  from: { seq: number; hash: string },
  records: AuditRecord[],
): { ok: true; last: { seq: number; hash: string } } | { ok: false; broken: ChainBreak; checked: number } {
  let prev = from;
  for (let i = 0; i < records.length; i++) {
    const r = records[i];
    if (r.seq !== prev.seq + 1) return { ok: false, broken: { id: r.id, seq: r.seq, reason: 'seq_gap' }, checked: i };
    if (r.prevHash !== prev.hash) return { ok: false, broken: { id: r.id, seq: r.seq, reason: 'prev_hash_mismatch' }, checked: i };
    const { prevHash, hash, mac, ...body } = r;
    const expected = key.expected(prevHash, body, eras);
    if (expected.hash !== hash) return { ok: false, broken: { id: r.id, seq: r.seq, reason: 'hash_mismatch' }, checked: i };
    if (expected.mac !== mac) return { ok: false, broken: { id: r.id, seq: r.seq, reason: 'mac_mismatch' }, checked: i };
    prev = { seq: r.seq, hash: r.hash };
  }
  return { ok: true, last: prev };
}

/** Records `verifyInSlices` checks between two turns of the event loop (~20 us each: ~2 ms). */
export const VERIFY_SLICE = 100;

/**
 * `verifyBatch` over many records, `slice` at a time, yielding to the event loop between slices
 * (`setImmediate`): a checkpoint checks up to AUDIT_CHECKPOINT_EVERY (1,000) records, ~20 ms of
 * hashing that would otherwise stall every request and stream of the process at once.
 * `checked` of a break counts from the first record.
 */
export async function verifyInSlices(
  key: AuditChainKey,
  eras: ChainEras,
  from: { seq: number; hash: string },
  records: readonly AuditRecord[],
  slice = VERIFY_SLICE,
): Promise<ReturnType<typeof verifyBatch>> {
  let link = from;
  for (let i = 0; i < records.length; i += slice) {
    if (i > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const checked = verifyBatch(key, eras, link, records.slice(i, i + slice));
    if (!checked.ok) return { ...checked, checked: i + checked.checked };
    link = checked.last;
  }
  return { ok: true, last: link };
}
