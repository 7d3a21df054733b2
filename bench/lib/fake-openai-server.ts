import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * B1's two model turns from an OpenAI-compatible server on loopback (`--model openai_compatible`):
 * a request without a tool result gets a `get_time` tool call, one with a tool result gets the
 * scripted B1 answer (the same 200 characters in 50 chunks of 4), Chat Completions SSE (one write
 * per event, as a server streaming tokens would), usage last, `[DONE]`. It runs in the runner's
 * process: the service's CPU is measured without it.
 */
export async function startFakeOpenAi(answer: string, chunk = 4): Promise<{ baseUrl: string; calls: () => number; close: () => Promise<void> }> {
  let calls = 0;
  const event = (o: object) => `data: ${JSON.stringify(o)}\n\n`;
  const chunkOf = (delta: object, finish: string | null) => event({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'bench', choices: [{ index: 0, delta, finish_reason: finish }] });
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (b: Buffer) => parts.push(b));
    req.on('end', () => {
      calls++;
      let body: { messages?: Array<{ role: string }> } = {};
      try {
        body = JSON.parse(Buffer.concat(parts).toString('utf8'));
      } catch {
        res.writeHead(400).end();
        return;
      }
      const afterTool = (body.messages ?? []).some((m) => m.role === 'tool');
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const out: string[] = [chunkOf({ role: 'assistant', content: '' }, null)];
      if (afterTool) {
        for (let i = 0; i < answer.length; i += chunk) out.push(chunkOf({ content: answer.slice(i, i + chunk) }, null));
        out.push(chunkOf({}, 'stop'));
      } else {
        out.push(chunkOf({ tool_calls: [{ index: 0, id: `call_${calls}`, type: 'function', function: { name: 'get_time', arguments: '{}' } }] }, null));
        out.push(chunkOf({}, 'tool_calls'));
      }
      out.push(event({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'bench', choices: [], usage: { prompt_tokens: 100, completion_tokens: afterTool ? 50 : 10 } }));
      out.push('data: [DONE]\n\n');
      for (const o of out) res.write(o);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    calls: () => calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
