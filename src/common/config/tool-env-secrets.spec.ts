import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, loadConfig } from './app-config';
import { isServiceConfigVariable, SERVICE_CONFIG_VARIABLES, ToolEnvSecrets } from './tool-env-secrets';

const root = join(__dirname, '..', '..', '..');

function problemsOf(env: NodeJS.ProcessEnv): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('TOOL_ENV_SECRETS (CONTRACT section 13)', () => {
  it('lists nothing by default: no ${env:NAME} resolves', () => {
    const c = loadConfig({});
    expect(c.toolEnvSecrets.allows('CRM_TOKEN', 'tenant_a')).toBe(false);
    expect(c.toolEnvSecrets.allows('PATH', null)).toBe(false);
  });

  it('NAME is for every tenant, NAME@tenant for that tenant only', () => {
    const s = loadConfig({ TOOL_ENV_SECRETS: ' CRM_TOKEN , PAY_KEY@tenant_a,PAY_KEY@tenant_b, X@tenant_c ' }).toolEnvSecrets;
    expect(s.allows('CRM_TOKEN', 'tenant_a')).toBe(true);
    expect(s.allows('CRM_TOKEN', null)).toBe(true);
    expect(s.allows('PAY_KEY', 'tenant_a')).toBe(true);
    expect(s.allows('PAY_KEY', 'tenant_b')).toBe(true);
    expect(s.allows('PAY_KEY', 'tenant_c')).toBe(false);
    expect(s.allows('PAY_KEY', null)).toBe(false);
    expect(s.listed('X')).toBe(true);
    expect(s.allows('crm_token', 'tenant_a')).toBe(false);
  });

  it.each(['API_KEYS', 'DATABASE_URL', 'AUDIT_HMAC_KEY', 'WEBHOOK_SECRET_KEY', 'SECRETS_KEY', 'OPENAI_API_KEY', 'PGPASSWORD', 'NODE_OPTIONS', 'REDIS_URL', 'api_keys', 'TOOL_ENV_SECRETS'])(
    'refuses to start when the service configuration %s is listed, naming TOOL_ENV_SECRETS',
    (name) => {
      const problems = problemsOf({ TOOL_ENV_SECRETS: `OK_NAME,${name}` });
      expect(problems).toEqual([expect.stringMatching(new RegExp(`^TOOL_ENV_SECRETS=\\(entry "${name}"\\): ${name} is the service's own configuration`))]);
      expect(problemsOf({ TOOL_ENV_SECRETS: `${name}@tenant_a` })).toHaveLength(1);
    },
  );

  it('refuses malformed entries', () => {
    expect(problemsOf({ TOOL_ENV_SECRETS: 'A-B' })).toEqual(['TOOL_ENV_SECRETS=(entry "A-B"): must be NAME or NAME@tenant_id (NAME an environment variable\'s name)']);
    expect(problemsOf({ TOOL_ENV_SECRETS: 'A@' })).toHaveLength(1);
    expect(problemsOf({ TOOL_ENV_SECRETS: 'A@b@c' })).toHaveLength(1);
  });

  it('a configuration name is never allowed, even if a list somehow held it', () => {
    const s = ToolEnvSecrets.parse('FINE', []);
    expect(s.allows('API_KEYS', 't')).toBe(false);
    expect(isServiceConfigVariable('WEBHOOK_SOMETHING_NEW')).toBe(true);
    expect(isServiceConfigVariable('CRM_TOKEN')).toBe(false);
  });

  it('covers every variable of the configuration table (docs/configuration.md) and every one the code reads', () => {
    const readme = readFileSync(join(root, 'docs', 'configuration.md'), 'utf8');
    const table = [...readme.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((m) => m[1]);
    expect(table.length).toBeGreaterThan(30);
    const code = ['src/common/config/app-config.ts', 'clients/cli/agent-cli.ts'].map((f) => readFileSync(join(root, f), 'utf8')).join('\n');
    const read = [...code.matchAll(/(?:env\.|env\[['"]|(?:str|int|bool|secretKey)\(['"])([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]);
    expect(read.length).toBeGreaterThan(30);
    const missing = [...new Set([...table, ...read])].filter((n) => !SERVICE_CONFIG_VARIABLES.has(n));
    expect(missing).toEqual([]);
  });
});
