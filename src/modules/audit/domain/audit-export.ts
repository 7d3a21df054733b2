import { AuditCheckpoint } from './audit-checkpoint';
import { AuditRecord, auditRecordFields, ChainEras, hashAlgOf } from './audit-record';

/** The export's format name and version (the `header` line), for readers that check what they parse. */
export const EXPORT_FORMAT = 'agent-api.audit-export';
export const EXPORT_VERSION = 1;

/**
 * One record as exported (ndjson line, `audit.recorded` webhook data): the 16 hashed fields as
 * the API returns them, `prev_hash`, `hash`, `mac` and `hash_alg` (`sha256`: recompute it;
 * `hmac-sha256`: a record of the keyed era, only its link can be checked without the key).
 */
export function exportedRecord(r: AuditRecord, eras: ChainEras): Record<string, unknown> {
  return {
    kind: 'record',
    ...auditRecordFields(r),
    prev_hash: r.prevHash,
    hash: r.hash,
    mac: r.mac,
    hash_alg: hashAlgOf(r.seq, eras),
  };
}

/** A signed checkpoint as exported: what was signed (`tenant_id`, `seq`, `hash`, `at`), by which key, and the signature. */
export function exportedCheckpoint(c: AuditCheckpoint): Record<string, unknown> {
  return { kind: 'checkpoint', tenant_id: c.tenantId, seq: c.seq, hash: c.hash, at: c.at.toISOString(), key_id: c.keyId, algorithm: 'ed25519', signature: c.signature };
}

/**
 * The CSV columns, in order (header row first). `kind` is `record` or `checkpoint`; a cell is
 * empty for null and for what the kind has not; `data` is the record's JSON. For verification use
 * ndjson (CSV cannot tell null from an empty string).
 */
export const CSV_COLUMNS = [
  'kind',
  'tenant_id',
  'seq',
  'id',
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
  'prev_hash',
  'hash',
  'mac',
  'hash_alg',
  'at',
  'key_id',
  'signature',
] as const;

/** One CSV row (RFC 4180: fields with a comma, quote, CR or LF are quoted, quotes doubled; CRLF line ends). */
export function csvRow(o: Record<string, unknown>): string {
  return CSV_COLUMNS.map((c) => csvCell(c === 'data' && o.data !== undefined ? JSON.stringify(o.data) : o[c])).join(',') + '\r\n';
}

export function csvHeader(): string {
  return CSV_COLUMNS.join(',') + '\r\n';
}

function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  const s = String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}
