/**
 * B4's ceiling: a bare Fastify + pg route doing the same primary-key SELECT on the same `runs`
 * table as GET /v1/runs/{id}, with nothing else (no auth, no Nest, no projection). Started by the
 * runner in its own process: `node dist/bench/bare-server.js` with DATABASE_URL, PORT, POOL.
 */
import Fastify from 'fastify';
import { Pool } from 'pg';

async function main(): Promise<void> {
  const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.POOL ?? 10) });
  const app = Fastify({ logger: false });
  app.get('/healthz', async () => ({ ok: true }));
  app.get<{ Params: { id: string } }>('/v1/runs/:id', async (req, reply) => {
    const { rows } = await pool.query('SELECT * FROM runs WHERE id = $1', [req.params.id]);
    if (rows.length === 0) return reply.status(404).send({ error: { code: 'run_not_found' } });
    return rows[0];
  });
  await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
  const close = () => {
    void app
      .close()
      .then(() => pool.end())
      .finally(() => process.exit(0));
  };
  process.on('SIGTERM', close);
  process.on('SIGINT', close);
}

main().catch((err) => {
  process.stderr.write(`bare server: ${(err as Error).stack}\n`);
  process.exit(1);
});
