/**
 * Issue 27: the CPU one model call costs the service, through the AI SDK's OpenAI-compatible
 * provider against a fake server on loopback (the fake's own CPU is in a child process, not
 * counted) vs the scripted model, both streaming the B1 answer: 200 characters in 50 chunks.
 * Alternating batches (A B A B ...) so a shared machine's load hits both alike.
 *   npm run --silent build && swc bench -d dist --quiet && node dist/bench/model-provider-overhead.js [calls-per-batch] [pairs]
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { AiSdkModelProvider, languageModelOf } from '../src/modules/agents/infrastructure/models/ai-sdk-model-provider';
import { ScriptedModelProvider } from '../src/modules/agents/infrastructure/models/scripted-model-provider';
import { ModelProvider, ModelRequest } from '../src/modules/agents/domain/model-provider';

const TEXT = 'x'.repeat(200);
const CHUNK = 4;

/** The fake server (child process): Chat Completions SSE of TEXT in 50 chunks, usage last, [DONE]. */
function serve(): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const http = require('node:http') as typeof import('node:http');
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (delta: object, finish: string | null) =>
        `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      let out = chunk({ role: 'assistant', content: '' }, null);
      for (let i = 0; i < TEXT.length; i += CHUNK) out += chunk({ content: TEXT.slice(i, i + CHUNK) }, null);
      out += chunk({}, 'stop');
      out += `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage: { prompt_tokens: 10, completion_tokens: 50 } })}\n\n`;
      out += 'data: [DONE]\n\n';
      // One write per chunk, as a server streaming tokens would.
      for (const part of out.split(/(?<=\n\n)/)) res.write(part);
      res.end();
    });
  });
  server.listen(0, '127.0.0.1', () => process.send!((server.address() as import('node:net').AddressInfo).port));
}

function request(): ModelRequest {
  const script = `!script ${JSON.stringify([{ text: TEXT, chunk_size: CHUNK, delay_ms: 0 }])}`;
  return {
    model: 'm',
    runId: 'run_bench',
    callIndex: 0,
    instructions: '',
    messages: [{ role: 'user', content: [{ type: 'text', text: script }] }],
    tools: [],
    attachments: [],
    signal: new AbortController().signal,
    deadline: Date.now() + 60_000,
  };
}

async function batch(p: ModelProvider, n: number): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    let chars = 0;
    for await (const e of p.stream(request())) if (e.type === 'text_delta') chars += e.text.length;
    if (chars !== TEXT.length) throw new Error(`got ${chars} characters`);
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / n; // microseconds of CPU per call
}

async function main(): Promise<void> {
  if (process.argv[2] === '--serve') return serve();
  const perBatch = Number(process.argv[2] ?? 200);
  const pairs = Number(process.argv[3] ?? 5);
  const child = fork(__filename, ['--serve'], { stdio: 'inherit' });
  const [port] = (await once(child, 'message')) as [number];
  const sdk = new AiSdkModelProvider({ id: 'm', provider: 'openai_compatible', model: 'm', baseUrl: `http://127.0.0.1:${port}/v1` }, { maxRetries: 0, baseDelayMs: 0 });
  const scripted = new ScriptedModelProvider();
  await batch(sdk, 20);
  await batch(scripted, 20);
  // Where the time goes: the provider's doStream alone (HTTP + SSE parse + chunk validation), and plain fetch reading the body.
  const model = languageModelOf({ id: 'm', provider: 'openai_compatible', model: 'm', baseUrl: `http://127.0.0.1:${port}/v1` }) as Exclude<ReturnType<typeof languageModelOf>, string>;
  const raw = async (n: number) => {
    const before = process.cpuUsage();
    for (let i = 0; i < n; i++) {
      const { stream } = await (model as any).doStream({ prompt: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], includeRawChunks: false });
      for await (const _ of stream as AsyncIterable<unknown>) void _;
    }
    const u = process.cpuUsage(before);
    return (u.user + u.system) / n;
  };
  const plain = async (n: number) => {
    const before = process.cpuUsage();
    for (let i = 0; i < n; i++) {
      const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
      await res.text();
    }
    const u = process.cpuUsage(before);
    return (u.user + u.system) / n;
  };
  const a: number[] = [];
  const b: number[] = [];
  const c: number[] = [];
  const d: number[] = [];
  for (let i = 0; i < pairs; i++) {
    a.push(await batch(scripted, perBatch));
    b.push(await batch(sdk, perBatch));
    c.push(await raw(perBatch));
    d.push(await plain(perBatch));
  }
  const med = (xs: number[]) => Math.round([...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]);
  console.log(
    JSON.stringify({
      perBatch,
      pairs,
      us_per_call: { scripted: a.map(Math.round), ai_sdk_provider: b.map(Math.round), ai_sdk_doStream: c.map(Math.round), plain_fetch_text: d.map(Math.round) },
      median: { scripted: med(a), ai_sdk_provider: med(b), ai_sdk_doStream: med(c), plain_fetch_text: med(d) },
    }),
  );
  child.kill();
}

void main();
