/**
 * Offline verification of an audit export (`GET /v1/admin/audit/export?format=ndjson`): no server,
 * no AUDIT_HMAC_KEY, only the export and the Ed25519 public key(s) from
 * `GET /v1/admin/audit/public-key`. Self-contained (node:crypto only), the recipe of docs/audit.md in full:
 *
 * - every record: `seq` follows the one before, `prev_hash` is its hash, and `hash` is the SHA-256
 *   of (prev_hash + canonical record) (records of the keyed era, `hash_alg` `hmac-sha256`, can only
 *   be checked for their links: counted as `keyed_records`);
 * - every checkpoint: signed by one of the keys (Ed25519 over the canonical JSON of
 *   {at, hash, seq, tenant_id}) and naming the hash the record at its seq has: a record rewritten
 *   and every later hash recomputed passes the first checks but not this one;
 * - the file ends with its `end` line and its counts (a cut-off download does not).
 *
 * Reads line by line (memory stays flat for any size). Records after the last checkpoint are
 * reported as `unsigned_tail`: nothing but the chain vouches for them.
 */
import { createHash, createPublicKey, KeyObject, verify } from 'node:crypto';

export const GENESIS_HASH = '0'.repeat(64);

export type ExportBreakReason =
  | 'malformed_line'
  | 'unexpected_line'
  | 'tenant_mismatch'
  | 'seq_gap'
  | 'prev_hash_mismatch'
  | 'hash_mismatch'
  | 'checkpoint_mismatch'
  | 'checkpoint_signature_invalid'
  | 'checkpoint_out_of_place'
  | 'truncated';

export interface ExportVerification {
  ok: boolean;
  tenant_id: string | null;
  records: number;
  checkpoints: number;
  first_seq: number | null;
  last_seq: number | null;
  /** The last seq a valid checkpoint vouches for (every record up to it, back to the export's start). */
  signed_up_to: number | null;
  /** Records after the last checkpoint. */
  unsigned_tail: number;
  /** Records of the keyed era (links checked, hashes not recomputable without the key). */
  keyed_records: number;
  /** Whether the first record follows a checkpoint in the export or is seq 1 (else its prev_hash is taken on trust). */
  anchored: boolean;
  first_bad?: { line: number; seq: number | null; id: string | null; reason: ExportBreakReason; message: string };
}

/** Canonical JSON: keys sorted by UTF-16 code units at every depth, no whitespace, JSON.stringify for scalars. */
export function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v ?? null);
  if (Array.isArray(v)) return `[${v.map((x) => canonicalJson(x === undefined ? null : x)).join(',')}]`;
  const keys = Object.keys(v as object)
    .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`).join(',')}}`;
}

const HASHED = [
  'id',
  'tenant_id',
  'seq',
  'occurred_at',
  'actor_subject_id',
  'actor_role',
  'actor_key_id',
  'action',
  'resource_type',
  'resource_id',
  'session_id',
  'run_id',
  'request_id',
  'outcome',
  'status',
  'data',
] as const;

/** hash = hex SHA-256 of UTF-8 (prev_hash + canonical JSON of the 16 hashed fields). */
export function recordHash(r: Record<string, unknown>): string {
  const body: Record<string, unknown> = {};
  for (const k of HASHED) body[k] = r[k] === undefined ? null : r[k];
  return createHash('sha256').update(String(r.prev_hash) + canonicalJson(body), 'utf8').digest('hex');
}

/** The id of an Ed25519 public key: the first 16 hex digits of SHA-256 over its SPKI DER. */
export function keyIdOf(key: KeyObject): string {
  return createHash('sha256').update(key.export({ type: 'spki', format: 'der' })).digest('hex').slice(0, 16);
}

/** Public keys from a file: one or more PEM blocks, or the JSON of GET /v1/admin/audit/public-key. */
export function parsePublicKeys(text: string): KeyObject[] {
  const trimmed = text.trim();
  const pems = trimmed.startsWith('{')
    ? ((JSON.parse(trimmed) as { data?: Array<{ public_key_pem?: string }> }).data ?? []).map((k) => String(k.public_key_pem ?? ''))
    : (trimmed.match(/-----BEGIN PUBLIC KEY-----[\s\S]+?-----END PUBLIC KEY-----/g) ?? []);
  if (!pems.length) throw new Error('no public key found (a PEM "BEGIN PUBLIC KEY" block, or the JSON of GET /v1/admin/audit/public-key)');
  return pems.map((pem) => {
    const key = createPublicKey(pem);
    if (key.asymmetricKeyType !== 'ed25519') throw new Error(`not an Ed25519 public key (${key.asymmetricKeyType})`);
    return key;
  });
}

/** Checks an ndjson export, line by line, against the given public keys. */
export async function verifyExport(lines: AsyncIterable<string>, keys: KeyObject[]): Promise<ExportVerification> {
  const byId = new Map(keys.map((k) => [keyIdOf(k), k]));
  const out: ExportVerification = {
    ok: true,
    tenant_id: null,
    records: 0,
    checkpoints: 0,
    first_seq: null,
    last_seq: null,
    signed_up_to: null,
    unsigned_tail: 0,
    keyed_records: 0,
    anchored: false,
  };
  let prev: { seq: number; hash: string; id: string | null } | null = null;
  let lastSignedAt = 0;
  let ended = false;
  let lineNo = 0;
  const fail = (reason: ExportBreakReason, seq: number | null, id: string | null, message: string): ExportVerification => {
    out.ok = false;
    out.first_bad = { line: lineNo, seq, id, reason, message };
    out.unsigned_tail = out.last_seq !== null && out.signed_up_to !== null ? out.last_seq - out.signed_up_to : out.records;
    return out;
  };
  for await (const raw of lines) {
    lineNo++;
    if (raw.trim() === '') continue;
    let o: Record<string, unknown>;
    try {
      o = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      return fail('malformed_line', null, null, `line ${lineNo} is not JSON`);
    }
    if (ended) return fail('unexpected_line', null, null, `line ${lineNo} follows the end line`);
    const seq = typeof o.seq === 'number' ? o.seq : null;
    const id = typeof o.id === 'string' ? o.id : null;
    if (o.kind === 'header') {
      out.tenant_id = typeof o.tenant_id === 'string' ? o.tenant_id : null;
      continue;
    }
    if (o.kind !== 'end' && out.tenant_id !== null && o.tenant_id !== out.tenant_id) {
      return fail('tenant_mismatch', seq, id, `line ${lineNo} is of tenant ${String(o.tenant_id)}, the export of ${out.tenant_id}`);
    }
    if (o.kind === 'checkpoint') {
      out.checkpoints++;
      const key = byId.get(String(o.key_id));
      const signed = canonicalJson({ tenant_id: o.tenant_id, seq: o.seq, hash: o.hash, at: o.at });
      let valid = false;
      try {
        valid = key !== undefined && verify(null, Buffer.from(signed, 'utf8'), key, Buffer.from(String(o.signature), 'base64'));
      } catch {
        valid = false;
      }
      if (!valid) {
        return fail('checkpoint_signature_invalid', seq, prev?.seq === seq ? prev.id : null, `the checkpoint at seq ${seq} is not signed by ${key ? 'its key' : `a given key (key_id ${String(o.key_id)})`}`);
      }
      if (prev === null) {
        // The checkpoint the export starts after: the first record must link to its hash.
        prev = { seq: seq ?? 0, hash: String(o.hash), id: null };
        out.anchored = true;
        lastSignedAt = prev.seq;
        continue;
      }
      if (seq !== prev.seq) return fail('checkpoint_out_of_place', seq, null, `the checkpoint at seq ${seq} follows record ${prev.seq}`);
      if (o.hash !== prev.hash) {
        return fail(
          'checkpoint_mismatch',
          seq,
          prev.id,
          `the signed checkpoint at seq ${seq} names another hash than the record's: a record after seq ${lastSignedAt} and at or before seq ${seq} was changed and the chain recomputed`,
        );
      }
      out.signed_up_to = seq;
      lastSignedAt = seq ?? lastSignedAt;
      continue;
    }
    if (o.kind === 'record') {
      if (seq === null) return fail('malformed_line', null, id, `line ${lineNo}: a record without a numeric seq`);
      if (prev === null) {
        if (seq === 1) {
          prev = { seq: 0, hash: GENESIS_HASH, id: null };
          out.anchored = true;
        } else prev = { seq: seq - 1, hash: String(o.prev_hash), id: null };
      }
      if (seq !== prev.seq + 1) return fail('seq_gap', seq, id, `record ${id} has seq ${seq} where seq ${prev.seq + 1} was expected (missing or reordered)`);
      if (o.prev_hash !== prev.hash) return fail('prev_hash_mismatch', seq, id, `record ${id} (seq ${seq}) does not link to the record before it`);
      if (o.hash_alg === 'hmac-sha256') out.keyed_records++;
      else if (recordHash(o) !== o.hash) return fail('hash_mismatch', seq, id, `record ${id} (seq ${seq}) was changed: its hash does not recompute`);
      out.records++;
      if (out.first_seq === null) out.first_seq = seq;
      out.last_seq = seq;
      prev = { seq, hash: String(o.hash), id };
      continue;
    }
    if (o.kind === 'end') {
      if (o.records !== out.records || o.checkpoints !== out.checkpoints) {
        return fail('truncated', null, null, `the end line counts ${String(o.records)} records and ${String(o.checkpoints)} checkpoints, the file has ${out.records} and ${out.checkpoints}`);
      }
      ended = true;
      continue;
    }
    return fail('unexpected_line', seq, id, `line ${lineNo} has an unknown kind ${JSON.stringify(o.kind)}`);
  }
  if (!ended) return fail('truncated', null, null, 'the export ends without its end line (cut off?)');
  out.unsigned_tail = out.last_seq !== null ? out.last_seq - (out.signed_up_to ?? (out.first_seq ?? 1) - 1) : 0;
  return out;
}
