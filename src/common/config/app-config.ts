import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { OutboundUrlPolicy } from '../outbound/outbound-http';
import { parseSigningKey } from './audit-signing-key';
import { projectRoot } from './project-root';
import { ToolEnvSecrets } from './tool-env-secrets';

export type Role = 'member' | 'admin';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

export interface ApiKeySeed {
  key: string;
  tenantId: string;
  subjectId: string;
  role: Role;
}

/** A webhook attempt waits this long for the receiver's answer, then is aborted (CONTRACT section 14). */
export const WEBHOOK_ATTEMPT_TIMEOUT_MS = 10_000;
/**
 * The least a webhook claim's lease exceeds the attempt timeout by: the payload is rendered within
 * that margin before the request starts (a request starts only with its full timeout left in the lease).
 */
export const WEBHOOK_LEASE_MIN_MARGIN_MS = 5_000;

/** Validated configuration. Built once from the environment by `loadConfig`. */
export class AppConfig {
  port!: number;
  host!: string;
  databaseUrl!: string | null;
  /** The schema owner's URL, used only to run migrations (DATABASE_URL may then name a role without DDL rights). */
  databaseOwnerUrl!: string | null;
  /** NODE_ENV=production. */
  production!: boolean;
  /** Keys the audit hash chain (HMAC-SHA256); null: generated into DATA_DIR (see audit-hmac-key.ts). */
  auditHmacKey!: string | null;
  /** Signs the audit checkpoints (Ed25519, PEM or base64 PKCS#8); null: generated into DATA_DIR (see audit-signing-key.ts). */
  auditSigningKey!: string | null;
  /** A tenant's chain head is signed every this many records... */
  auditCheckpointEvery!: number;
  /** ...and at least this often while records are written (ms). */
  auditCheckpointMs!: number;
  /** Audit records older than this are pruned, up to a signed checkpoint; 0 keeps them forever. */
  auditRetentionDays!: number;
  /** Encrypts webhook signing secrets at rest (AES-256-GCM); null: generated into DATA_DIR (see webhook-secret-key.ts). */
  webhookSecretKey!: string | null;
  /** Encrypts the tenants' secrets (`PUT /v1/secrets/{name}`) at rest (AES-256-GCM); null: generated into DATA_DIR (see secrets-key.ts). */
  secretsKey!: string | null;
  /** First webhook retry after about this long, doubling (CONTRACT section 14). */
  webhookRetryBaseMs!: number;
  /** A webhook delivery is retried for this long after the event, then `failed` (24 h). */
  webhookRetryWindowMs!: number;
  /**
   * A claimed webhook delivery not recorded by then is presumed dead (its node crashed) and claimed
   * again: the attempt timeout plus a margin (default 10 s + 10 s); no attempt outlives it.
   */
  webhookLeaseMs!: number;
  /** Attempts one webhook endpoint may have in flight at once, on all nodes together (CONTRACT section 14, isolation). */
  webhookMaxInFlight!: number;
  /** A scheduled automation slot missed while no node was up fires on start-up if younger than this, else is `skipped` (CONTRACT section 17). */
  automationCatchupMs!: number;
  /** How often each node looks for due automation slots (ms). */
  automationPollMs!: number;
  /** `AUTOMATIONS_MAX_PER_TENANT`: automations (active or paused) a tenant may have; one more is 409 automation_limit_reached. */
  automationsMaxPerTenant!: number;
  /** `AUTOMATIONS_MAX_PER_MEMBER`: automations (active or paused) one subject (a member's or an admin's key) may own. */
  automationsMaxPerMember!: number;
  /** Default session TTL in seconds for sessions created without `ttl`; null: never expire (CONTRACT section 17). */
  sessionTtlSeconds!: number | null;
  /** How often the session TTL sweeper runs (ms). */
  sessionTtlSweepMs!: number;
  dataDir!: string;
  apiKeys!: ApiKeySeed[];
  apiKeysFromDefault!: boolean;
  logLevel!: LogLevel;
  docsEnabled!: boolean;
  bodyMaxBytes!: number;
  rateLimitPerMinute!: number;
  /** Requests per client IP per minute without a valid API key (missing or unknown key). */
  rateLimitUnauthenticatedPerMinute!: number;
  /** Shared limits (rate limit, SSE streams per key) across nodes; null: counted per node. */
  redisUrl!: string | null;
  redisKeyPrefix!: string;
  /** A node's shared SSE counts expire this long after its last heartbeat (a crashed node stops counting). */
  redisNodeTtlMs!: number;
  /** Cross-node event notifications over NATS (core pub/sub); null: LISTEN/NOTIFY (PostgreSQL) or in-process (embedded). */
  natsUrl!: string | null;
  natsSubject!: string;
  /** While NATS is unreachable, streams with subscribers re-read PostgreSQL this often. */
  natsDegradedPollMs!: number;
  /** While NATS is up, streams with subscribers are still re-read this often (a writer that died between commit and publish). */
  natsSafetyPollMs!: number;
  /** PostgreSQL LISTEN/NOTIFY (no NATS_URL): streams with subscribers are still re-read this often (a writer that died between commit and notification). */
  pgNotifySafetyPollMs!: number;
  idempotencyTtlHours!: number;
  agentDefaultId!: string;
  agentsDir!: string;
  runQueueTtlMs!: number;
  approvalTtlMs!: number;
  /** An `ask_user` unanswered this long expires its run (CONTRACT 17). */
  inputTtlMs!: number;
  eventRetentionDays!: number;
  /** Width of a run_events time partition (retention drops them whole). */
  eventPartitionDays!: number;
  sseKeepaliveMs!: number;
  sseMaxPerKey!: number;
  attachmentMaxBytes!: number;
  attachmentTtlHours!: number;
  openaiBaseUrl!: string | null;
  openaiApiKey!: string | null;
  openaiModel!: string | null;
  /** MODELS_FILE: the model registry (JSON array); unset = the default list (scripted + the OPENAI_* entry). */
  modelsFile!: string | null;
  /** Retries of a model call refused with 429/overload/5xx before any output (backoff honours retry-after). */
  modelMaxRetries!: number;
  /** First backoff of those retries (doubled each time). */
  modelRetryBaseMs!: number;
  workerEnabled!: boolean;
  workerConcurrency!: number;
  runLeaseMs!: number;
  nodeId!: string;
  dbPoolSize!: number;
  dbQueryTimeoutMs!: number;
  /** Background work's share of each turn of the event loop while requests wait (BackgroundSlices); 0: none. */
  backgroundSliceUs!: number;
  /** Server timeouts against slow clients (none of them cuts an SSE stream whose keep-alives flow). */
  httpHeadersTimeoutMs!: number;
  httpRequestTimeoutMs!: number;
  httpConnectionTimeoutMs!: number;
  /** URL prefixes that outbound calls (http/mcp tools, webhooks) may reach (CONTRACT section 13). */
  outboundUrlAllowlist!: string[];
  /**
   * `PUBLIC_BASE_URL`: the service's address as tools and clients reach it (no trailing slash),
   * used for absolute URLs it hands out (a callback tool's `Callback-Url`). Default
   * `http://<HOST or 127.0.0.1>:<PORT>`; set it behind a proxy or load balancer.
   */
  publicBaseUrl!: string;
  /** Whether PUBLIC_BASE_URL was set (else the listening address fills `publicBaseUrl` once known). */
  publicBaseUrlSet!: boolean;
  /** Environment variables a tool header may name as `${env:NAME}`, and for which tenants (TOOL_ENV_SECRETS). */
  toolEnvSecrets!: ToolEnvSecrets;
}

/**
 * Every problem loadConfig found, each one line that names the variable, its value (a secret's
 * length only, a URL without its password) and what is allowed: `PORT="abc": must be a whole
 * number from 0 to 65535`. The message is those lines, each after `invalid configuration: `.
 */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.map((p) => `invalid configuration: ${p}`).join('\n'));
    this.name = 'ConfigError';
  }
}

/** A value as a problem line shows it: quoted, on one line. */
export function shownValue(raw: string): string {
  return JSON.stringify(raw);
}

/** A URL (or a comma-separated list of them) as a problem line shows it: each password (`user:***@`) hidden. */
export function shownUrl(raw: string): string {
  return shownValue(
    raw
      .split(',')
      .map((u) => u.replace(/^(\s*[a-z][a-z0-9+.-]*:\/\/[^/@:\s]*):[^@/\s]*@/i, '$1:***@'))
      .join(','),
  );
}

/** A secret as a problem line shows it: never the text, only its length. */
export function shownSecret(raw: string): string {
  return `(${raw.length} characters, not shown)`;
}

export const DEFAULT_DEV_KEY = 'dev-key-0001:tenant_dev:user_dev:admin';
/** OUTBOUND_URL_ALLOWLIST's default on the development key (loopback only); with API_KEYS set it is empty. */
export const DEV_OUTBOUND_URL_ALLOWLIST = 'http://127.0.0.1:*,http://localhost:*';
export const AUDIT_HMAC_KEY_MIN_LENGTH = 32;
const KEY_RE = /^[A-Za-z0-9_-]{8,}$/;
const NAME_RE = /^[A-Za-z0-9_.-]{1,64}$/;

/** A listen address that only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h);
}

/** Reads and validates the environment; every problem is reported at once. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const problems: string[] = [];
  /** One problem: NAME=<value as shown>: what is allowed. */
  const bad = (name: string, shown: string, allowed: string) => problems.push(`${name}=${shown}: ${allowed}`);
  const str = (name: string, def: string): string => {
    const v = env[name];
    return v === undefined || v === '' ? def : v;
  };
  const int = (name: string, def: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return def;
    const allowed = `must be a whole number from ${min} to ${max}`;
    if (!/^\d+$/.test(raw.trim())) {
      bad(name, shownValue(raw), allowed);
      return def;
    }
    const n = Number(raw);
    if (n < min || n > max) bad(name, shownValue(raw), allowed);
    return n;
  };
  const bool = (name: string, def: boolean): boolean => {
    const raw = env[name];
    if (raw === undefined || raw === '') return def;
    if (/^(true|1|yes|on)$/i.test(raw)) return true;
    if (/^(false|0|no|off)$/i.test(raw)) return false;
    bad(name, shownValue(raw), 'must be true or false (or 1/0, yes/no, on/off)');
    return def;
  };

  const c = new AppConfig();
  c.port = int('PORT', 3000, 0, 65535);
  const explicitHost = env.HOST !== undefined && env.HOST.trim() !== '' ? env.HOST.trim() : null;
  const dbUrl = env.DATABASE_URL;
  c.databaseUrl = dbUrl && dbUrl.trim() !== '' ? dbUrl.trim() : null;
  if (c.databaseUrl && !/^postgres(ql)?:\/\//.test(c.databaseUrl)) {
    bad('DATABASE_URL', shownUrl(c.databaseUrl), 'must be a postgres:// or postgresql:// URL (unset: the embedded database in DATA_DIR)');
  }
  const ownerUrl = env.DATABASE_OWNER_URL?.trim() || null;
  c.databaseOwnerUrl = ownerUrl;
  if (ownerUrl && !/^postgres(ql)?:\/\//.test(ownerUrl)) bad('DATABASE_OWNER_URL', shownUrl(ownerUrl), 'must be a postgres:// or postgresql:// URL');
  if (ownerUrl && !c.databaseUrl) bad('DATABASE_OWNER_URL', shownUrl(ownerUrl), 'needs DATABASE_URL (the embedded database has one role): set DATABASE_URL too, or unset DATABASE_OWNER_URL');
  c.dataDir = resolve(str('DATA_DIR', './data'));
  c.production = env.NODE_ENV === 'production';
  /** A secret key from the environment (null when unset): long enough, and required in production with DATABASE_URL (`why` says what it protects). */
  const secretKey = (name: string, why: string): string | null => {
    const raw = env[name];
    const key = raw && raw.trim() !== '' ? raw.trim() : null;
    if (key !== null && key.length < AUDIT_HMAC_KEY_MIN_LENGTH) {
      bad(name, shownSecret(key), `must be at least ${AUDIT_HMAC_KEY_MIN_LENGTH} characters (e.g. the output of \`openssl rand -base64 32\`)`);
    }
    if (key === null && c.production && c.databaseUrl) {
      bad(
        name,
        '(unset)',
        `is required in production (NODE_ENV=production with DATABASE_URL): ${why}. ` +
          'Set it to a secret of at least 32 characters (`openssl rand -base64 32`), the same on every node',
      );
    }
    return key;
  };
  c.auditHmacKey = secretKey(
    'AUDIT_HMAC_KEY',
    'it keys the audit hash chain, so that nobody who can write to the database without it can forge the trail',
  );
  const signingRaw = env.AUDIT_SIGNING_KEY?.trim() || null;
  c.auditSigningKey = signingRaw;
  if (signingRaw !== null) {
    try {
      parseSigningKey(signingRaw);
    } catch (err) {
      bad(
        'AUDIT_SIGNING_KEY',
        shownSecret(signingRaw),
        `must be an Ed25519 private key, PEM (PKCS#8) or base64 of its PKCS#8 DER (\`openssl genpkey -algorithm ed25519\`): ${(err as Error).message}`,
      );
    }
  } else if (c.production && c.databaseUrl) {
    bad(
      'AUDIT_SIGNING_KEY',
      '(unset)',
      'is required in production (NODE_ENV=production with DATABASE_URL): it signs the audit checkpoints that auditors verify, ' +
        'and every node must sign with the same key. Set it to an Ed25519 private key (`openssl genpkey -algorithm ed25519`)',
    );
  }
  c.auditCheckpointEvery = int('AUDIT_CHECKPOINT_EVERY', 1000, 1, 10_000_000);
  c.auditCheckpointMs = int('AUDIT_CHECKPOINT_MS', 60_000, 100, 24 * 3_600_000);
  c.auditRetentionDays = int('AUDIT_RETENTION_DAYS', 0, 0, 36_500);
  c.webhookSecretKey = secretKey(
    'WEBHOOK_SECRET_KEY',
    'it encrypts the webhook signing secrets at rest, and every node must sign with the same secrets',
  );
  c.secretsKey = secretKey(
    'SECRETS_KEY',
    "it encrypts the tenants' secrets (PUT /v1/secrets) at rest, and every node must decrypt them with the same key",
  );
  c.webhookRetryBaseMs = int('WEBHOOK_RETRY_BASE_MS', 1000, 1, 3_600_000);
  c.webhookRetryWindowMs = int('WEBHOOK_RETRY_WINDOW_MS', 24 * 3_600_000, 1000, 7 * 24 * 3_600_000);
  c.webhookLeaseMs = int('WEBHOOK_LEASE_MS', WEBHOOK_ATTEMPT_TIMEOUT_MS + 10_000, WEBHOOK_ATTEMPT_TIMEOUT_MS + WEBHOOK_LEASE_MIN_MARGIN_MS, 3_600_000);
  c.webhookMaxInFlight = int('WEBHOOK_MAX_IN_FLIGHT', 4, 1, 64);
  c.automationCatchupMs = int('AUTOMATION_CATCHUP_MS', 3_600_000, 0, 30 * 24 * 3_600_000);
  c.automationPollMs = int('AUTOMATION_POLL_MS', 1000, 20, 60_000);
  c.automationsMaxPerTenant = int('AUTOMATIONS_MAX_PER_TENANT', 200, 1, 1_000_000);
  c.automationsMaxPerMember = int('AUTOMATIONS_MAX_PER_MEMBER', 50, 1, 1_000_000);
  c.sessionTtlSeconds = env.SESSION_TTL_SECONDS && env.SESSION_TTL_SECONDS.trim() !== '' ? int('SESSION_TTL_SECONDS', 0, 1, 10 * 365 * 86_400) : null;
  c.sessionTtlSweepMs = int('SESSION_TTL_SWEEP_MS', 10_000, 20, 3_600_000);
  const levels: LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'];
  const level = str('LOG_LEVEL', 'info').toLowerCase();
  if (!levels.includes(level as LogLevel)) bad('LOG_LEVEL', shownValue(str('LOG_LEVEL', 'info')), `must be one of ${levels.join(', ')}`);
  c.logLevel = (levels.includes(level as LogLevel) ? level : 'info') as LogLevel;

  const rawKeys = env.API_KEYS && env.API_KEYS.trim() !== '' ? env.API_KEYS : null;
  c.apiKeysFromDefault = rawKeys === null;
  c.apiKeys = [];
  const seen = new Set<string>();
  // A key is a secret: an entry is named by its number and its other parts, never by its key.
  const entries = (rawKeys ?? DEFAULT_DEV_KEY).split(',').map((s) => s.trim()).filter(Boolean);
  for (const [i, entry] of entries.entries()) {
    const parts = entry.split(':');
    const which = `(entry ${i + 1} of ${entries.length}`;
    if (parts.length !== 4) {
      bad('API_KEYS', `${which}, ${parts.length} parts)`, 'each comma-separated entry must be key:tenant_id:subject_id:role');
      continue;
    }
    const [key, tenantId, subjectId, role] = parts;
    const entryShown = `${which}, ${shownValue(`***:${tenantId}:${subjectId}:${role}`)})`;
    if (!KEY_RE.test(key)) bad('API_KEYS', entryShown, `the key (${key.length} characters, not shown) must match [A-Za-z0-9_-]{8,}`);
    if (!NAME_RE.test(tenantId) || !NAME_RE.test(subjectId)) bad('API_KEYS', entryShown, 'tenant_id and subject_id must match [A-Za-z0-9_.-]{1,64}');
    if (role !== 'member' && role !== 'admin') bad('API_KEYS', entryShown, `the role must be member or admin, got ${shownValue(role)}`);
    if (seen.has(key)) bad('API_KEYS', entryShown, 'its key is listed in an earlier entry too: each key once');
    seen.add(key);
    c.apiKeys.push({ key, tenantId, subjectId, role: role as Role });
  }

  // Without configured keys the only key is the well-known development admin key: the server is
  // then reachable from this machine only. An explicit non-loopback HOST with it is refused (fail
  // closed: a container or VM would otherwise serve an admin key everyone knows).
  c.host = explicitHost ?? (c.apiKeysFromDefault ? '127.0.0.1' : '0.0.0.0');
  if (explicitHost !== null && c.apiKeysFromDefault && !isLoopbackHost(explicitHost)) {
    bad(
      'HOST',
      shownValue(explicitHost),
      `would serve the well-known development key (${DEFAULT_DEV_KEY.split(':')[0]}, admin) beyond this machine: ` +
        `set API_KEYS, or unset HOST (or use a loopback address) to listen on 127.0.0.1 only`,
    );
  }

  c.docsEnabled = bool('DOCS_ENABLED', true);
  c.bodyMaxBytes = int('BODY_MAX_BYTES', 1024 * 1024, 1024, 100 * 1024 * 1024);
  c.rateLimitPerMinute = int('RATE_LIMIT_PER_MINUTE', 600, 1, 10_000_000);
  // Unset: 60, or the per-key budget if that is lower (a caller without a key never gets more).
  c.rateLimitUnauthenticatedPerMinute = int('RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE', Math.min(60, c.rateLimitPerMinute), 1, 10_000_000);
  const redisUrl = env.REDIS_URL?.trim();
  c.redisUrl = redisUrl ? redisUrl : null;
  if (c.redisUrl && !/^rediss?:\/\/[^\s]+$/.test(c.redisUrl)) bad('REDIS_URL', shownUrl(c.redisUrl), 'must be a redis:// or rediss:// URL (unset: limits are counted per node)');
  c.redisKeyPrefix = str('REDIS_KEY_PREFIX', 'agent-api:');
  if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(c.redisKeyPrefix)) bad('REDIS_KEY_PREFIX', shownValue(c.redisKeyPrefix), 'must match [A-Za-z0-9_.:-]{1,64}');
  c.redisNodeTtlMs = int('REDIS_NODE_TTL_MS', 15_000, 300, 600_000);
  const natsUrl = env.NATS_URL?.trim();
  c.natsUrl = natsUrl ? natsUrl : null;
  if (c.natsUrl && !c.natsUrl.split(',').every((u) => /^(nats|tls):\/\/[^\s,]+$/.test(u.trim()))) {
    bad('NATS_URL', shownUrl(c.natsUrl), 'must be a nats:// (or tls://) URL, or a comma-separated list of them');
  }
  c.natsSubject = str('NATS_SUBJECT', 'agent_api.run_events');
  if (!/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(c.natsSubject) || c.natsSubject.length > 128) {
    bad('NATS_SUBJECT', shownValue(c.natsSubject), 'must be dot-separated tokens of [A-Za-z0-9_-] (no wildcards), at most 128 characters');
  }
  c.natsDegradedPollMs = int('NATS_DEGRADED_POLL_MS', 500, 50, 60_000);
  c.natsSafetyPollMs = int('NATS_SAFETY_POLL_MS', 5_000, 100, 600_000);
  c.pgNotifySafetyPollMs = int('PG_NOTIFY_SAFETY_POLL_MS', 5_000, 100, 600_000);
  c.idempotencyTtlHours = int('IDEMPOTENCY_TTL_HOURS', 24, 1, 24 * 365);
  c.agentDefaultId = str('AGENT_DEFAULT_ID', 'support_agent');
  c.agentsDir = resolve(str('AGENTS_DIR', join(projectRoot(), 'agents')));
  c.runQueueTtlMs = int('RUN_QUEUE_TTL_MS', 3_600_000, 1000, 30 * 24 * 3_600_000);
  c.approvalTtlMs = int('APPROVAL_TTL_MS', 24 * 3_600_000, 1000, 365 * 24 * 3_600_000);
  c.inputTtlMs = int('INPUT_TTL_MS', 24 * 3_600_000, 1000, 365 * 24 * 3_600_000);
  c.eventRetentionDays = int('EVENT_RETENTION_DAYS', 30, 1, 3650);
  c.eventPartitionDays = int('EVENT_PARTITION_DAYS', 7, 1, 366);
  c.sseKeepaliveMs = int('SSE_KEEPALIVE_MS', 15_000, 100, 600_000);
  c.sseMaxPerKey = int('SSE_MAX_PER_KEY', 100, 1, 1_000_000);
  c.attachmentMaxBytes = int('ATTACHMENT_MAX_BYTES', 10 * 1024 * 1024, 1, 1024 * 1024 * 1024);
  c.attachmentTtlHours = int('ATTACHMENT_TTL_HOURS', 168, 1, 24 * 3650);
  c.openaiBaseUrl = env.OPENAI_BASE_URL?.trim() || null;
  if (c.openaiBaseUrl && !/^https?:\/\//.test(c.openaiBaseUrl)) bad('OPENAI_BASE_URL', shownUrl(c.openaiBaseUrl), 'must be an http:// or https:// URL');
  c.openaiApiKey = env.OPENAI_API_KEY?.trim() || null;
  c.openaiModel = env.OPENAI_MODEL?.trim() || null;
  c.modelsFile = env.MODELS_FILE?.trim() ? resolve(env.MODELS_FILE.trim()) : null;
  c.modelMaxRetries = int('MODEL_MAX_RETRIES', 2, 0, 10);
  c.modelRetryBaseMs = int('MODEL_RETRY_BASE_MS', 1000, 0, 60_000);
  c.workerEnabled = bool('WORKER_ENABLED', true);
  c.workerConcurrency = int('WORKER_CONCURRENCY', 64, 1, 1000);
  c.runLeaseMs = int('RUN_LEASE_MS', 15_000, 1000, 3_600_000);
  c.nodeId = str('NODE_ID', `${hostname()}:${process.pid}`);
  c.dbPoolSize = int('DB_POOL_SIZE', 20, 1, 200);
  c.dbQueryTimeoutMs = int('DB_QUERY_TIMEOUT_MS', 15_000, 100, 3_600_000);
  c.backgroundSliceUs = int('BACKGROUND_SLICE_US', 500, 0, 100_000);
  c.httpHeadersTimeoutMs = int('HTTP_HEADERS_TIMEOUT_MS', 15_000, 100, 600_000);
  c.httpRequestTimeoutMs = int('HTTP_REQUEST_TIMEOUT_MS', 60_000, 100, 3_600_000);
  c.httpConnectionTimeoutMs = int('HTTP_CONNECTION_TIMEOUT_MS', 75_000, 100, 3_600_000);
  // Closed by default once real keys are set: no tenant admin can reach anything the operator did not list.
  c.outboundUrlAllowlist = str('OUTBOUND_URL_ALLOWLIST', c.apiKeysFromDefault ? DEV_OUTBOUND_URL_ALLOWLIST : '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  for (const entry of c.outboundUrlAllowlist) {
    const problem = OutboundUrlPolicy.entryProblem(entry);
    if (problem) bad('OUTBOUND_URL_ALLOWLIST', `(entry ${shownUrl(entry)})`, problem.replace(/^"[^"]*" /, ''));
  }
  c.toolEnvSecrets = ToolEnvSecrets.parse(env.TOOL_ENV_SECRETS, problems);
  c.publicBaseUrl = publicBaseUrl(env.PUBLIC_BASE_URL, explicitHost, c.port, problems);
  c.publicBaseUrlSet = Boolean(env.PUBLIC_BASE_URL?.trim());
  if (c.httpHeadersTimeoutMs > c.httpRequestTimeoutMs) {
    bad('HTTP_HEADERS_TIMEOUT_MS', String(c.httpHeadersTimeoutMs), `must not be longer than HTTP_REQUEST_TIMEOUT_MS (${c.httpRequestTimeoutMs})`);
  }
  if (c.httpConnectionTimeoutMs <= c.sseKeepaliveMs) {
    bad('HTTP_CONNECTION_TIMEOUT_MS', String(c.httpConnectionTimeoutMs), `must be longer than SSE_KEEPALIVE_MS (${c.sseKeepaliveMs}), or idle SSE streams would be cut`);
  }

  // One line each, whatever a library's error text held.
  if (problems.length > 0) throw new ConfigError(problems.map((p) => p.replace(/\s*[\r\n]+\s*/g, ' ')));
  return c;
}

/** `PUBLIC_BASE_URL` checked (an http(s) URL without query or fragment), or the default from HOST and PORT. */
function publicBaseUrl(raw: string | undefined, host: string | null, port: number, problems: string[]): string {
  const value = raw?.trim();
  if (!value) {
    const h = host === null || host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
    return `http://${h}:${port}`;
  }
  let url: URL | null = null;
  try {
    url = new URL(value);
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash || url.username || url.password) {
    problems.push(`PUBLIC_BASE_URL must be an http:// or https:// URL without credentials, query or fragment (e.g. https://agents.example.com), got "${value}"`);
    return `http://127.0.0.1:${port}`;
  }
  return url.toString().replace(/\/+$/, '');
}
