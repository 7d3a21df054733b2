import { resolve } from 'node:path';
import { AppConfig, ConfigError, loadConfig } from './app-config';

function problemsOf(env: NodeJS.ProcessEnv): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  describe('defaults (empty environment)', () => {
    let c: AppConfig;
    beforeAll(() => {
      c = loadConfig({});
    });

    it('has the documented defaults', () => {
      expect(c).toMatchObject({
        port: 3000,
        // No API_KEYS: only the well-known development key, so this machine only.
        host: '127.0.0.1',
        databaseUrl: null,
        dataDir: resolve('./data'),
        logLevel: 'info',
        docsEnabled: true,
        bodyMaxBytes: 1024 * 1024,
        rateLimitPerMinute: 600,
        idempotencyTtlHours: 24,
        agentDefaultId: 'support_agent',
        runQueueTtlMs: 3_600_000,
        approvalTtlMs: 24 * 3_600_000,
        inputTtlMs: 24 * 3_600_000,
        eventRetentionDays: 30,
        sseKeepaliveMs: 15_000,
        sseMaxPerKey: 100,
        attachmentMaxBytes: 10 * 1024 * 1024,
        attachmentTtlHours: 168,
        openaiBaseUrl: null,
        openaiApiKey: null,
        openaiModel: null,
        workerEnabled: true,
        dbPoolSize: 20,
        backgroundSliceUs: 500,
        rateLimitUnauthenticatedPerMinute: 60,
        redisUrl: null,
        redisKeyPrefix: 'agent-api:',
        redisNodeTtlMs: 15_000,
        eventPartitionDays: 7,
        natsUrl: null,
        natsSubject: 'agent_api.run_events',
        natsDegradedPollMs: 500,
        natsSafetyPollMs: 5_000,
        webhookRetryBaseMs: 1000,
        webhookRetryWindowMs: 24 * 3_600_000,
        // The 10 s attempt timeout plus a 10 s margin.
        webhookLeaseMs: 20_000,
      });
    });

    it('uses the development key when API_KEYS is unset', () => {
      expect(c.apiKeysFromDefault).toBe(true);
      expect(c.apiKeys).toEqual([{ key: 'dev-key-0001', tenantId: 'tenant_dev', subjectId: 'user_dev', role: 'admin' }]);
    });

    it('treats empty strings as unset', () => {
      const e = loadConfig({ PORT: '', DATABASE_URL: '  ', API_KEYS: ' ', LOG_LEVEL: '' });
      expect(e.port).toBe(3000);
      expect(e.databaseUrl).toBeNull();
      expect(e.apiKeysFromDefault).toBe(true);
      expect(e.logLevel).toBe('info');
    });
  });

  it('reads set values', () => {
    const c = loadConfig({
      WEBHOOK_LEASE_MS: '15000',
      WEBHOOK_MAX_IN_FLIGHT: '2',
      PORT: '8080',
      HOST: '127.0.0.1',
      DATABASE_URL: 'postgres://u@db:5432/app',
      DATA_DIR: '/tmp/x',
      LOG_LEVEL: 'DEBUG',
      DOCS_ENABLED: 'false',
      BODY_MAX_BYTES: '2048',
      IDEMPOTENCY_TTL_HOURS: '1',
      OPENAI_BASE_URL: 'https://api.example.com/v1',
    });
    expect(c).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      databaseUrl: 'postgres://u@db:5432/app',
      dataDir: '/tmp/x',
      logLevel: 'debug',
      docsEnabled: false,
      bodyMaxBytes: 2048,
      idempotencyTtlHours: 1,
      openaiBaseUrl: 'https://api.example.com/v1',
      webhookLeaseMs: 15_000,
      webhookMaxInFlight: 2,
    });
    expect(loadConfig({}).webhookMaxInFlight).toBe(4);
  });

  describe('HOST and API_KEYS', () => {
    it('listens on every interface by default once keys are configured', () => {
      expect(loadConfig({ API_KEYS: 'key-aaaa-1111:tenant_a:user_1:admin' }).host).toBe('0.0.0.0');
    });

    it('takes an explicit HOST with configured keys', () => {
      expect(loadConfig({ API_KEYS: 'key-aaaa-1111:tenant_a:user_1:admin', HOST: '10.1.2.3' }).host).toBe('10.1.2.3');
    });

    it.each(['127.0.0.1', '127.0.1.1', 'localhost', '::1', '[::1]'])('allows the loopback HOST=%s without API_KEYS', (host) => {
      expect(loadConfig({ HOST: host }).host).toBe(host);
    });

    it.each(['0.0.0.0', '::', '192.168.1.10', 'example.org'])('refuses HOST=%s without API_KEYS (the development key would be public)', (host) => {
      const problems = problemsOf({ HOST: host });
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(new RegExp(`^HOST="${host.replace(/\./g, '\\.')}": would serve the well-known development key .*set API_KEYS`));
    });
  });

  it.each([['true', true], ['1', true], ['yes', true], ['ON', true], ['false', false], ['0', false], ['no', false], ['Off', false]])(
    'DOCS_ENABLED=%s -> %s',
    (raw, value) => {
      expect(loadConfig({ DOCS_ENABLED: raw }).docsEnabled).toBe(value);
    },
  );

  describe('API_KEYS', () => {
    it('parses key:tenant:subject:role entries, trimming spaces and skipping empty entries', () => {
      const c = loadConfig({ API_KEYS: ' key-aaaa-1111:tenant_a:user_1:member , ,key_bbbb_2222:tenant_b:admin.b:admin,' });
      expect(c.apiKeysFromDefault).toBe(false);
      expect(c.apiKeys).toEqual([
        { key: 'key-aaaa-1111', tenantId: 'tenant_a', subjectId: 'user_1', role: 'member' },
        { key: 'key_bbbb_2222', tenantId: 'tenant_b', subjectId: 'admin.b', role: 'admin' },
      ]);
    });

    it.each([
      ['a wrong number of parts', 'key-aaaa-1111:tenant_a:member', /4|parts/],
      ['a short key', 'short:tenant_a:user_1:member', /\[A-Za-z0-9_-\]\{8,\}/],
      ['a key with bad characters', 'key+aaaa+1111:tenant_a:user_1:member', /\[A-Za-z0-9_-\]\{8,\}/],
      ['an unknown role', 'key-aaaa-1111:tenant_a:user_1:owner', /role must be member or admin/],
      ['a bad tenant id', 'key-aaaa-1111:tenant a:user_1:member', /^API_KEYS=\(entry 1 of 1, "\*\*\*:tenant a:user_1:member"\): tenant_id and subject_id/],
      ['a duplicate key', 'key-aaaa-1111:t:u:member,key-aaaa-1111:t:v:admin', /^API_KEYS=\(entry 2 of 2, .*listed in an earlier entry/],
    ])('rejects %s', (_, raw, message) => {
      const problems = problemsOf({ API_KEYS: raw });
      expect(problems.some((p) => message.test(p))).toBe(true);
    });

    it('never echoes a raw key in a problem message', () => {
      const problems = problemsOf({ API_KEYS: 'secret-key-123:tenant a:user_1:member' });
      expect(problems.join('\n')).not.toContain('secret-key-123');
      expect(problemsOf({ API_KEYS: 'secret-key-456:t:u' }).join('\n')).not.toContain('secret-key-456');
    });
  });

  it('reports every problem at once in one ConfigError with a readable message', () => {
    let err: unknown;
    try {
      loadConfig({
        PORT: 'eighty',
        DATABASE_URL: 'mysql://x',
        LOG_LEVEL: 'loud',
        DOCS_ENABLED: 'maybe',
        BODY_MAX_BYTES: '10',
        OPENAI_BASE_URL: 'ftp://x',
        API_KEYS: 'k:t:u',
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const ce = err as ConfigError;
    expect(ce.problems).toHaveLength(7);
    for (const name of ['PORT', 'DATABASE_URL', 'LOG_LEVEL', 'DOCS_ENABLED', 'BODY_MAX_BYTES', 'OPENAI_BASE_URL', 'API_KEYS']) {
      expect(ce.message).toContain(name);
    }
    // One line per problem, each naming the variable, the value and what is allowed.
    expect(ce.message.split('\n')).toEqual(ce.problems.map((p) => `invalid configuration: ${p}`));
    expect(ce.problems).toEqual([
      'PORT="eighty": must be a whole number from 0 to 65535',
      'DATABASE_URL="mysql://x": must be a postgres:// or postgresql:// URL (unset: the embedded database in DATA_DIR)',
      'LOG_LEVEL="loud": must be one of fatal, error, warn, info, debug, trace',
      'API_KEYS=(entry 1 of 1, 3 parts): each comma-separated entry must be key:tenant_id:subject_id:role',
      'DOCS_ENABLED="maybe": must be true or false (or 1/0, yes/no, on/off)',
      'BODY_MAX_BYTES="10": must be a whole number from 1024 to 104857600',
      'OPENAI_BASE_URL="ftp://x": must be an http:// or https:// URL',
    ]);
  });

  it('shows a URL without its password and a secret by its length only', () => {
    expect(problemsOf({ DATABASE_URL: 'mysql://app:hunter2@db/app' })).toEqual([expect.stringMatching(/^DATABASE_URL="mysql:\/\/app:\*\*\*@db\/app": /)]);
    expect(problemsOf({ REDIS_URL: 'http://:pw-9@r:6379' })).toEqual([expect.stringMatching(/^REDIS_URL="http:\/\/:\*\*\*@r:6379": must be a redis/)]);
    expect(problemsOf({ NATS_URL: 'nats://a:pw-1@n1:4222,http://b:pw-2@n2' })).toEqual(['NATS_URL="nats://a:***@n1:4222,http://b:***@n2": must be a nats:// (or tls://) URL, or a comma-separated list of them']);
    expect(problemsOf({ AUDIT_HMAC_KEY: 'hunter2' })).toEqual(['AUDIT_HMAC_KEY=(7 characters, not shown): must be at least 32 characters (e.g. the output of `openssl rand -base64 32`)']);
    const signing = problemsOf({ AUDIT_SIGNING_KEY: 'bm90IGEga2V5' });
    expect(signing).toEqual([expect.stringMatching(/^AUDIT_SIGNING_KEY=\(12 characters, not shown\): must be an Ed25519 private key/)]);
    expect(signing[0]).not.toContain('bm90IGEga2V5');
    expect(signing[0]).not.toMatch(/[\r\n]/);
  });

  it.each([
    ['PORT', '-1'],
    ['PORT', '70000'],
    ['PORT', '3.5'],
    ['BODY_MAX_BYTES', '1023'],
    ['IDEMPOTENCY_TTL_HOURS', '0'],
    ['DB_POOL_SIZE', '1000'],
    ['BACKGROUND_SLICE_US', '-1'],
    ['BACKGROUND_SLICE_US', '100001'],
    // Shorter than the 10 s attempt timeout plus the 5 s least margin: an attempt could outlive its lease.
    ['WEBHOOK_LEASE_MS', '14999'],
    // At least one attempt per endpoint, at most the node's 64 attempts in flight.
    ['WEBHOOK_MAX_IN_FLIGHT', '0'],
    ['WEBHOOK_MAX_IN_FLIGHT', '65'],
  ])('rejects %s=%s', (name, value) => {
    const problems = problemsOf({ [name]: value });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(name);
  });

  it('reads OUTBOUND_URL_ALLOWLIST and rejects entries that are not http(s) URL prefixes', () => {
    // The development key: loopback, any port. Real keys: closed until the operator lists prefixes.
    expect(loadConfig({}).outboundUrlAllowlist).toEqual(['http://127.0.0.1:*', 'http://localhost:*']);
    expect(loadConfig({ API_KEYS: 'key-00000001:t:s:admin' }).outboundUrlAllowlist).toEqual([]);
    expect(loadConfig({ API_KEYS: 'key-00000001:t:s:admin', OUTBOUND_URL_ALLOWLIST: 'http://127.0.0.1:*' }).outboundUrlAllowlist).toEqual(['http://127.0.0.1:*']);
    expect(problemsOf({ OUTBOUND_URL_ALLOWLIST: 'http://x.example/a%5c' })).toEqual([expect.stringMatching(/^OUTBOUND_URL_ALLOWLIST=\(entry "http:\/\/x.example\/a%5c"\): must not contain an encoded/)]);
    expect(loadConfig({ OUTBOUND_URL_ALLOWLIST: ' https://tools.example.com/v1 , http://10.0.0.5:8080' }).outboundUrlAllowlist).toEqual([
      'https://tools.example.com/v1',
      'http://10.0.0.5:8080',
    ]);
    expect(() => loadConfig({ OUTBOUND_URL_ALLOWLIST: 'http://ok.example,file:///etc' })).toThrow(/OUTBOUND_URL_ALLOWLIST=\(entry "file:\/\/\/etc"\): is not an http/);
  });

  describe('database roles and the audit key', () => {
    const PG = 'postgres://agent_api@db:5432/app';
    /** An Ed25519 PKCS#8 key, base64 of the DER (as `openssl genpkey -algorithm ed25519 | openssl pkey -outform DER | base64` prints). */
    const SIGNING = 'MC4CAQAwBQYDK2VwBCIEIGedE7sfJSzDtPm7Mz2woILYgSLcoRQKB3n5hG/H+sWg';

    it('reads DATABASE_OWNER_URL (migrations only) and AUDIT_HMAC_KEY', () => {
      const c = loadConfig({ DATABASE_URL: PG, DATABASE_OWNER_URL: 'postgres://owner@db:5432/app', AUDIT_HMAC_KEY: ` ${'k'.repeat(32)} `, WEBHOOK_SECRET_KEY: 'w'.repeat(32), SECRETS_KEY: 's'.repeat(32), AUDIT_SIGNING_KEY: SIGNING, NODE_ENV: 'production' });
      expect(c).toMatchObject({ databaseUrl: PG, databaseOwnerUrl: 'postgres://owner@db:5432/app', auditHmacKey: 'k'.repeat(32), secretsKey: 's'.repeat(32), production: true });
      expect(loadConfig({})).toMatchObject({ databaseOwnerUrl: null, auditHmacKey: null, secretsKey: null, production: false });
    });

    it('requires AUDIT_HMAC_KEY in production with DATABASE_URL, saying why and how to make one', () => {
      const problems = problemsOf({ NODE_ENV: 'production', DATABASE_URL: PG });
      expect(problems).toEqual([
        expect.stringContaining('AUDIT_HMAC_KEY=(unset): is required in production (NODE_ENV=production with DATABASE_URL)'),
        expect.stringContaining('AUDIT_SIGNING_KEY=(unset): is required in production (NODE_ENV=production with DATABASE_URL)'),
        expect.stringContaining('WEBHOOK_SECRET_KEY=(unset): is required in production (NODE_ENV=production with DATABASE_URL)'),
        expect.stringContaining('SECRETS_KEY=(unset): is required in production (NODE_ENV=production with DATABASE_URL)'),
      ]);
      expect(problems[1]).toContain('openssl genpkey -algorithm ed25519');
      expect(problems[2]).toContain('openssl rand -base64 32');
      expect(problems[3]).toContain("it encrypts the tenants' secrets");
      expect(problemsOf({ NODE_ENV: 'production', DATABASE_URL: PG, AUDIT_HMAC_KEY: 'k'.repeat(32), AUDIT_SIGNING_KEY: SIGNING, WEBHOOK_SECRET_KEY: 'short', SECRETS_KEY: 's'.repeat(32) })).toEqual([
        expect.stringContaining('WEBHOOK_SECRET_KEY=(5 characters, not shown): must be at least 32 characters'),
      ]);
      // Not an Ed25519 private key: refused with the reason.
      expect(problemsOf({ AUDIT_SIGNING_KEY: 'bm90IGEga2V5' })).toEqual([expect.stringContaining('): must be an Ed25519 private key')]);
      expect(problemsOf({ NODE_ENV: 'production', DATABASE_URL: PG, AUDIT_HMAC_KEY: 'k'.repeat(32), AUDIT_SIGNING_KEY: SIGNING, WEBHOOK_SECRET_KEY: 'w'.repeat(32), SECRETS_KEY: 's'.repeat(31) })).toEqual([
        expect.stringContaining('SECRETS_KEY=(31 characters, not shown): must be at least 32 characters'),
      ]);
      expect(problems[0]).toContain('openssl rand -base64 32');
      // The embedded database keeps its generated key (in DATA_DIR); outside production a generated one is used with a warning.
      expect(() => loadConfig({ NODE_ENV: 'production' })).not.toThrow();
      expect(() => loadConfig({ NODE_ENV: 'development', DATABASE_URL: PG })).not.toThrow();
    });

    it('rejects a short AUDIT_HMAC_KEY and an owner URL without DATABASE_URL or of another scheme', () => {
      expect(problemsOf({ AUDIT_HMAC_KEY: 'k'.repeat(31) })).toEqual([expect.stringContaining('AUDIT_HMAC_KEY=(31 characters, not shown): must be at least 32 characters')]);
      expect(problemsOf({ DATABASE_OWNER_URL: PG })).toEqual([expect.stringContaining('DATABASE_OWNER_URL="postgres://agent_api@db:5432/app": needs DATABASE_URL')]);
      expect(problemsOf({ DATABASE_URL: PG, DATABASE_OWNER_URL: 'mysql://x' })).toEqual([expect.stringContaining('DATABASE_OWNER_URL="mysql://x": must be a postgres')]);
    });
  });

  describe('rate limits and Redis', () => {
    it('callers without a valid key get 60 a minute, or the per-key budget if that is lower, unless set', () => {
      expect(loadConfig({ RATE_LIMIT_PER_MINUTE: '5' }).rateLimitUnauthenticatedPerMinute).toBe(5);
      expect(loadConfig({ RATE_LIMIT_PER_MINUTE: '5000' }).rateLimitUnauthenticatedPerMinute).toBe(60);
      expect(loadConfig({ RATE_LIMIT_PER_MINUTE: '5', RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '100' }).rateLimitUnauthenticatedPerMinute).toBe(100);
    });

    it('reads REDIS_URL, REDIS_KEY_PREFIX and REDIS_NODE_TTL_MS', () => {
      expect(loadConfig({ REDIS_URL: ' redis://127.0.0.1:6379/2 ', REDIS_KEY_PREFIX: 'prod-eu:', REDIS_NODE_TTL_MS: '5000' })).toMatchObject({
        redisUrl: 'redis://127.0.0.1:6379/2',
        redisKeyPrefix: 'prod-eu:',
        redisNodeTtlMs: 5000,
      });
      expect(loadConfig({ REDIS_URL: 'rediss://user:pw@cache:6380' }).redisUrl).toBe('rediss://user:pw@cache:6380');
      expect(loadConfig({ REDIS_URL: '  ' }).redisUrl).toBeNull();
    });

    it.each([
      ['REDIS_URL', 'http://cache:6379'],
      ['REDIS_URL', 'redis://a b'],
      ['REDIS_KEY_PREFIX', 'has space'],
      ['REDIS_NODE_TTL_MS', '10'],
      ['RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE', '0'],
    ])('rejects %s=%s', (name, value) => {
      const problems = problemsOf({ [name]: value });
      expect(problems).toHaveLength(1);
      expect(problems[0]).toContain(name);
    });
  });

  describe('NATS', () => {
    it('reads NATS_URL (one or a list), NATS_SUBJECT and the poll intervals', () => {
      expect(loadConfig({ NATS_URL: ' nats://127.0.0.1:4222 ', NATS_SUBJECT: 'prod.events', NATS_DEGRADED_POLL_MS: '250', NATS_SAFETY_POLL_MS: '2000' })).toMatchObject({
        natsUrl: 'nats://127.0.0.1:4222',
        natsSubject: 'prod.events',
        natsDegradedPollMs: 250,
        natsSafetyPollMs: 2000,
      });
      expect(loadConfig({ NATS_URL: 'nats://a:4222,tls://b:4222' }).natsUrl).toBe('nats://a:4222,tls://b:4222');
      expect(loadConfig({ NATS_URL: '' }).natsUrl).toBeNull();
    });

    it.each([
      ['NATS_URL', 'http://nats:4222'],
      ['NATS_URL', 'nats://a:4222,redis://b'],
      ['NATS_SUBJECT', 'events.>'],
      ['NATS_SUBJECT', 'a..b'],
      ['NATS_DEGRADED_POLL_MS', '10'],
      ['NATS_SAFETY_POLL_MS', '0'],
      ['PG_NOTIFY_SAFETY_POLL_MS', '99'],
    ])('rejects %s=%s', (name, value) => {
      const problems = problemsOf({ [name]: value });
      expect(problems).toHaveLength(1);
      expect(problems[0]).toContain(name);
    });
  });

  it('accepts postgresql:// URLs too', () => {
    expect(loadConfig({ DATABASE_URL: 'postgresql://u@h/db' }).databaseUrl).toBe('postgresql://u@h/db');
  });
});
