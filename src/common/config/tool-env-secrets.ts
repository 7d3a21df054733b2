/**
 * Which environment variables a tool header may name as `${env:NAME}` (CONTRACT section 13):
 * only those the operator lists in TOOL_ENV_SECRETS, as `NAME` (every tenant) or `NAME@tenant_id`
 * (that tenant only). The service's own configuration can never be listed: a tenant admin who
 * could name `API_KEYS` or `DATABASE_URL` in a header would send them to a server of their choice.
 */

/** Every variable the service, its CLI or its libraries read as configuration (docs/configuration.md's table and more). */
export const SERVICE_CONFIG_VARIABLES: ReadonlySet<string> = new Set([
  'AGENTS_DIR',
  'AUTOMATIONS_MAX_PER_TENANT',
  'AUTOMATIONS_MAX_PER_MEMBER',
  'AGENT_API_KEY',
  'AGENT_API_URL',
  'AGENT_DEFAULT_ID',
  'API_KEYS',
  'APPROVAL_TTL_MS',
  'INPUT_TTL_MS',
  'ATTACHMENT_MAX_BYTES',
  'ATTACHMENT_TTL_HOURS',
  'AUDIT_CHECKPOINT_EVERY',
  'AUDIT_CHECKPOINT_MS',
  'AUDIT_HMAC_KEY',
  'AUDIT_RETENTION_DAYS',
  'AUDIT_SIGNING_KEY',
  'BACKGROUND_SLICE_US',
  'BODY_MAX_BYTES',
  'DATABASE_OWNER_URL',
  'DATABASE_URL',
  'DATA_DIR',
  'DB_POOL_SIZE',
  'DB_QUERY_TIMEOUT_MS',
  'DOCS_ENABLED',
  'EVENT_PARTITION_DAYS',
  'EVENT_RETENTION_DAYS',
  'HOST',
  'HOSTNAME',
  'HOME',
  'HTTP_CONNECTION_TIMEOUT_MS',
  'HTTP_HEADERS_TIMEOUT_MS',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'HTTP_REQUEST_TIMEOUT_MS',
  'IDEMPOTENCY_TTL_HOURS',
  'LOG_LEVEL',
  'NATS_DEGRADED_POLL_MS',
  'NATS_SAFETY_POLL_MS',
  'PG_NOTIFY_SAFETY_POLL_MS',
  'NATS_SUBJECT',
  'NATS_URL',
  'NO_COLOR',
  'NODE_ENV',
  'NODE_ID',
  'MODELS_FILE',
  'MODEL_MAX_RETRIES',
  'MODEL_RETRY_BASE_MS',
  'OPENAI_API_KEY',
  'OPENAI_BASE_URL',
  'OPENAI_MODEL',
  'OUTBOUND_URL_ALLOWLIST',
  'PATH',
  'PORT',
  'PUBLIC_BASE_URL',
  'RATE_LIMIT_PER_MINUTE',
  'RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE',
  'REDIS_KEY_PREFIX',
  'REDIS_NODE_TTL_MS',
  'REDIS_URL',
  'RUN_LEASE_MS',
  'RUN_QUEUE_TTL_MS',
  'SECRETS_KEY',
  'SSE_KEEPALIVE_MS',
  'SSE_MAX_PER_KEY',
  'TOOL_ENV_SECRETS',
  'WEBHOOK_LEASE_MS',
  'WEBHOOK_MAX_IN_FLIGHT',
  'AUTOMATION_CATCHUP_MS',
  'AUTOMATION_POLL_MS',
  'SESSION_TTL_SECONDS',
  'SESSION_TTL_SWEEP_MS',
  'WEBHOOK_RETRY_BASE_MS',
  'WEBHOOK_RETRY_WINDOW_MS',
  'WEBHOOK_SECRET_KEY',
  'WORKER_CONCURRENCY',
  'WORKER_ENABLED',
]);

/**
 * Families that are configuration whatever the exact name: the service's own groups (a variable
 * added later is covered before anyone remembers this list), libpq's `PG*` (the `pg` driver reads
 * PGPASSWORD), Node's and npm's, and provider keys the model adapters read.
 */
const SERVICE_CONFIG_PREFIXES = [
  'AUDIT_',
  'AGENT_API_',
  'ATTACHMENT_',
  'DATABASE_',
  'DB_',
  'HTTP_',
  'NATS_',
  'NODE_',
  'NPM_',
  'OPENAI_',
  'ANTHROPIC_',
  'GEMINI_',
  'GOOGLE_',
  'AZURE_OPENAI_',
  'MISTRAL_',
  'OUTBOUND_',
  'PG',
  'RATE_LIMIT_',
  'REDIS_',
  'RUN_',
  'SECRETS_',
  'SSE_',
  'TOOL_ENV_',
  'WEBHOOK_',
  'WORKER_',
];

/** Whether NAME is (or may become) the service's own configuration. */
export function isServiceConfigVariable(name: string): boolean {
  const upper = name.toUpperCase();
  return SERVICE_CONFIG_VARIABLES.has(upper) || SERVICE_CONFIG_PREFIXES.some((p) => upper.startsWith(p));
}

const ENV_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const TENANT_RE = /^[A-Za-z0-9_.-]{1,64}$/;

/** TOOL_ENV_SECRETS, parsed: which tenant may name which variable. */
export class ToolEnvSecrets {
  private constructor(
    /** Names every tenant may use. */
    private readonly everyone: ReadonlySet<string>,
    /** NAME -> the tenants that may use it. */
    private readonly perTenant: ReadonlyMap<string, ReadonlySet<string>>,
  ) {}

  static readonly none = new ToolEnvSecrets(new Set(), new Map());

  /** Parses the variable's value; problems (bad entries, configuration names) go to `problems`. */
  static parse(raw: string | undefined, problems: string[]): ToolEnvSecrets {
    const everyone = new Set<string>();
    const perTenant = new Map<string, Set<string>>();
    for (const entry of (raw ?? '').split(',').map((s) => s.trim()).filter(Boolean)) {
      const at = entry.indexOf('@');
      const name = at < 0 ? entry : entry.slice(0, at);
      const tenant = at < 0 ? null : entry.slice(at + 1);
      if (!ENV_NAME_RE.test(name) || (tenant !== null && !TENANT_RE.test(tenant))) {
        problems.push(`TOOL_ENV_SECRETS=(entry ${JSON.stringify(entry)}): must be NAME or NAME@tenant_id (NAME an environment variable's name)`);
        continue;
      }
      if (isServiceConfigVariable(name)) {
        problems.push(`TOOL_ENV_SECRETS=(entry ${JSON.stringify(entry)}): ${name} is the service's own configuration and can never be sent to a tool; list variables of your own`);
        continue;
      }
      if (tenant === null) everyone.add(name);
      else perTenant.set(name, (perTenant.get(name) ?? new Set()).add(tenant));
    }
    return new ToolEnvSecrets(everyone, perTenant);
  }

  /** Whether a tool of `tenantId` (null: a shared file agent, outside any tenant) may name `${env:NAME}`. */
  allows(name: string, tenantId: string | null): boolean {
    if (isServiceConfigVariable(name)) return false;
    if (this.everyone.has(name)) return true;
    return tenantId !== null && (this.perTenant.get(name)?.has(tenantId) ?? false);
  }

  /** Whether any tenant may name it (a file agent's entry is checked with this at start-up). */
  listed(name: string): boolean {
    return this.everyone.has(name) || this.perTenant.has(name);
  }
}
