import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Agents created by the API (CONTRACT section 13), owned by the agents module: one row per
 * immutable version. `tools` is the definition as sent (header values are `${env:NAME}`
 * templates, never secrets); `resolved_tools` the tool list the version pins (MCP tools as
 * listed at creation). A deleted agent keeps its rows (`deleted_at`) for the sessions pinned to them.
 */
export class ApiAgents1764497700000 implements MigrationInterface {
  name = 'ApiAgents1764497700000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE agent_versions (
        tenant_id      text NOT NULL,
        agent_id       text NOT NULL,
        version        integer NOT NULL CHECK (version >= 1),
        description    text NOT NULL,
        model          text NOT NULL,
        instructions   text NOT NULL,
        tools          jsonb NOT NULL,
        resolved_tools jsonb NOT NULL,
        created_by     text NOT NULL,
        created_at     timestamptz(3) NOT NULL,
        deleted_at     timestamptz(3),
        -- An inline configuration of one session (POST /sessions with \`agent\`): never listed.
        hidden         boolean NOT NULL DEFAULT false,
        PRIMARY KEY (tenant_id, agent_id, version)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE agent_versions`);
  }
}
