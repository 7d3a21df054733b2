/**
 * Memory proof for uploads (CONTRACT section 11): streams a 100 MiB multipart upload against a
 * 10 MiB ATTACHMENT_MAX_BYTES cap and prints the process RSS before, at its peak during, and
 * after each request (several rounds: the first one also warms the process up). The client body is generated lazily (never held whole), so the numbers are
 * the server's. Expect 413 payload_too_large, no rows stored, and an RSS that stays flat.
 *
 *   npm run build && npx swc bench/upload-memory.ts -d dist --config-file .swcrc && node --expose-gc dist/bench/upload-memory.js
 *   (DATABASE_URL=postgres://... for PostgreSQL; UPLOAD_MIB / CAP_MIB / ROUNDS to change the sizes)
 */
import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { createApp, listen } from '../src/app.factory';
import { loadConfig } from '../src/common/config/app-config';

const MiB = 1024 * 1024;
const UPLOAD_BYTES = Number(process.env.UPLOAD_MIB ?? 100) * MiB;
const CAP_BYTES = Number(process.env.CAP_MIB ?? 10) * MiB;
const KEY = 'bench-key-0001';
const ROUNDS = Number(process.env.ROUNDS ?? 3);

const mib = (n: number) => `${(n / MiB).toFixed(1)} MiB`;

/** A multipart/form-data body of `size` bytes of file content, produced 64 KiB at a time. */
function multipartBody(boundary: string, size: number): ReadableStream<Uint8Array> {
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.txt"\r\nContent-Type: text/plain\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const block = Buffer.alloc(64 * 1024, 0x61);
  let sent = 0;
  let stage: 'head' | 'body' | 'tail' | 'done' = 'head';
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (stage === 'head') {
        controller.enqueue(head);
        stage = 'body';
      } else if (stage === 'body') {
        const n = Math.min(block.length, size - sent);
        controller.enqueue(block.subarray(0, n));
        sent += n;
        if (sent >= size) stage = 'tail';
      } else if (stage === 'tail') {
        controller.enqueue(tail);
        stage = 'done';
      } else {
        controller.close();
      }
    },
  });
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-api-bench-'));
  const config = loadConfig({
    ...process.env,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    DATA_DIR: dataDir,
    API_KEYS: `${KEY}:tenant_bench:user_bench:member`,
    ATTACHMENT_MAX_BYTES: String(CAP_BYTES),
  });
  const app = await createApp(config);
  const url = await listen(app, config);
  try {
    console.log(`upload ${mib(UPLOAD_BYTES)} against a cap of ${mib(CAP_BYTES)} (${config.databaseUrl ? 'PostgreSQL' : 'embedded PGlite'}), ${ROUNDS} rounds`);
    global.gc?.();
    const start = process.memoryUsage().rss;
    console.log(`  rss at start    ${mib(start)}`);
    for (let round = 1; round <= ROUNDS; round++) {
      const before = process.memoryUsage().rss;
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
      const boundary = `----bench${Date.now()}`;
      const started = Date.now();
      const res = await fetch(`${url}/v1/attachments`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${KEY}`,
          'idempotency-key': `bench-${round}-${Date.now()}`,
          'content-type': `multipart/form-data; boundary=${boundary}`,
        },
        body: multipartBody(boundary, UPLOAD_BYTES),
        duplex: 'half',
      } as RequestInit & { duplex: 'half' });
      const text = await res.text();
      const elapsed = Date.now() - started;
      clearInterval(sampler);
      global.gc?.();
      const after = process.memoryUsage().rss;
      const ds = app.get(DataSource);
      const [{ n: rows }] = await ds.query(`SELECT count(*)::int AS n FROM attachments`);
      const [{ n: blobs }] = await ds.query(`SELECT count(*)::int AS n FROM attachment_blobs`);
      let code = '-';
      try {
        code = JSON.parse(text).error?.code ?? '-';
      } catch {
        /* not JSON */
      }
      console.log(
        `  round ${round}: ${res.status} ${code} in ${elapsed} ms; rss before ${mib(before)}, peak ${mib(peak)} (+${mib(peak - before)}), ` +
          `after ${mib(after)}; rows left: attachments=${rows} attachment_blobs=${blobs}`,
      );
      if (res.status !== 413 || Number(rows) !== 0 || Number(blobs) !== 0) process.exitCode = 1;
    }
    const end = process.memoryUsage().rss;
    console.log(`  rss at end      ${mib(end)} (${end >= start ? '+' : ''}${mib(end - start)} for ${mib(UPLOAD_BYTES * ROUNDS)} received)`);
  } finally {
    await app.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
