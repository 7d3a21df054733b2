import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../../../common/config/app-config';
import { ModelAttachment, ModelError, ModelMessage, ModelProvider, ModelRequest, ModelStreamEvent } from '../../domain/model-provider';
import { estimateTokens, withDeadline } from '../abort';
import { inputChars } from './scripted-model-provider';
import { exceedsJsonDepth } from '../../../../common/text/json-depth';
import { SseParser } from './sse-parser';

/** Chat Completions request message (the subset we send). */
type OpenAiContentPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };
export type OpenAiMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | OpenAiContentPart[] }
  | { role: 'assistant'; content: string | null; tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }> }
  | { role: 'tool'; tool_call_id: string; content: string };

interface StreamChunk {
  choices?: Array<{
    index?: number;
    delta?: {
      content?: string | null;
      refusal?: string | null;
      tool_calls?: Array<{ index?: number; id?: string; type?: string; function?: { name?: string; arguments?: string } }>;
    };
    finish_reason?: string | null;
  }>;
  usage?: { prompt_tokens?: number; completion_tokens?: number; prompt_tokens_details?: { cached_tokens?: number } } | null;
  error?: { message?: string; code?: string | number; type?: string };
}

const MAX_ERROR_BODY = 4096;

function attachmentText(a: ModelAttachment): string {
  const head = `[attachment ${a.attachment_id}: ${a.filename} (${a.media_type}, ${a.size_bytes} bytes)]`;
  return typeof a.text === 'string' ? `${head}\n${a.text}` : head;
}

/** Maps our messages (CONTRACT section 6 parts) to Chat Completions messages. */
export function toOpenAiMessages(instructions: string, messages: ModelMessage[], attachments: ModelAttachment[]): OpenAiMessage[] {
  const byId = new Map(attachments.map((a) => [a.attachment_id, a]));
  const out: OpenAiMessage[] = [];
  if (instructions.trim()) out.push({ role: 'system', content: instructions });
  for (const m of messages) {
    switch (m.role) {
      case 'system': {
        const text = m.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n');
        if (text) out.push({ role: 'system', content: text });
        break;
      }
      case 'user': {
        const parts: OpenAiContentPart[] = [];
        for (const p of m.content) {
          if (p.type === 'text') parts.push({ type: 'text', text: p.text });
          else if (p.type === 'attachment_ref') {
            const a = byId.get(p.attachment_id);
            if (!a) parts.push({ type: 'text', text: `[attachment ${p.attachment_id}: not available]` });
            else if (a.image_base64) {
              parts.push({ type: 'text', text: attachmentText(a) });
              parts.push({ type: 'image_url', image_url: { url: `data:${a.media_type};base64,${a.image_base64}` } });
            } else parts.push({ type: 'text', text: attachmentText(a) });
          }
        }
        const images = parts.some((p) => p.type === 'image_url');
        out.push({
          role: 'user',
          content: images ? parts : parts.map((p) => (p as { text: string }).text).join('\n\n'),
        });
        break;
      }
      case 'assistant': {
        const text = m.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
        const calls = m.content.flatMap((p) =>
          p.type === 'tool_call'
            ? [{ id: p.tool_call_id, type: 'function' as const, function: { name: p.tool_name, arguments: JSON.stringify(p.arguments ?? {}) } }]
            : [],
        );
        out.push({ role: 'assistant', content: text || null, ...(calls.length ? { tool_calls: calls } : {}) });
        break;
      }
      case 'tool':
        for (const p of m.content) {
          if (p.type !== 'tool_result') continue;
          out.push({ role: 'tool', tool_call_id: p.tool_call_id, content: JSON.stringify(p.ok ? (p.result ?? null) : { error: p.error ?? null }) });
        }
        break;
    }
  }
  return out;
}

function parseArguments(raw: string): unknown {
  if (raw.trim() === '') return {};
  // Deeper than any request may nest: kept as text, so the tool registry answers invalid_tool_arguments.
  if (exceedsJsonDepth(raw)) return raw;
  try {
    return JSON.parse(raw);
  } catch {
    return raw; // not JSON: the tool registry answers invalid_tool_arguments and the model sees why
  }
}

/**
 * Any OpenAI-compatible Chat Completions endpoint, streamed (`stream: true`) over plain fetch.
 * Text deltas are yielded as they arrive; tool-call fragments are assembled and yielded at the
 * end; usage comes from `stream_options.include_usage` (estimated when the server sends none).
 */
@Injectable()
export class OpenAiModelProvider extends ModelProvider {
  private readonly baseUrl: string;
  private readonly apiKey: string | null;

  constructor(config: AppConfig) {
    super();
    this.baseUrl = (config.openaiBaseUrl ?? 'https://api.openai.com/v1').replace(/\/+$/, '');
    this.apiKey = config.openaiApiKey;
  }

  async *stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
    const guard = withDeadline(request.signal, request.deadline);
    const timeoutError = () =>
      new ModelError('model_timeout', guard.deadlineHit() ? 'the model call passed the run deadline' : 'the model call was aborted');
    let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
    try {
      if (guard.signal.aborted) throw timeoutError();
      const messages = toOpenAiMessages(request.instructions, request.messages, request.attachments);
      const body = {
        model: request.model,
        stream: true,
        stream_options: { include_usage: true },
        messages,
        ...(request.tools.length
          ? { tools: request.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })) }
          : {}),
      };
      let res: Response;
      try {
        res = await fetch(`${this.baseUrl}/chat/completions`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'text/event-stream',
            ...(this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {}),
          },
          body: JSON.stringify(body),
          signal: guard.signal,
        });
      } catch (err) {
        if (guard.signal.aborted) throw timeoutError();
        throw new ModelError('model_error', `model endpoint unreachable: ${(err as Error).message}`, true);
      }
      if (!res.ok) {
        const detail = await res
          .text()
          .then((t) => t.slice(0, MAX_ERROR_BODY))
          .catch(() => '');
        if (guard.signal.aborted) throw timeoutError();
        let message = `model endpoint answered HTTP ${res.status}`;
        try {
          const e = JSON.parse(detail) as { error?: { message?: string } };
          if (e.error?.message) message += `: ${e.error.message}`;
        } catch {
          /* not JSON */
        }
        throw new ModelError('model_error', message, res.status === 429 || res.status === 408 || res.status >= 500);
      }
      if (!res.body) throw new ModelError('model_error', 'model endpoint sent no body', true);

      reader = res.body.getReader();
      const decoder = new TextDecoder();
      const parser = new SseParser();
      const calls = new Map<number, { id?: string; name: string; args: string }>();
      const st = { usage: null as ModelStreamEvent | null, outChars: 0, refusal: '', finish: null as string | null, done: false };

      const handle = (data: string): ModelStreamEvent[] => {
        if (data.trim() === '[DONE]') {
          st.done = true;
          return [];
        }
        let chunk: StreamChunk;
        try {
          chunk = JSON.parse(data) as StreamChunk;
        } catch {
          throw new ModelError('model_error', 'model endpoint sent a malformed stream chunk', true);
        }
        if (chunk.error) throw new ModelError('model_error', `model endpoint error: ${chunk.error.message ?? 'unknown'}`, true);
        if (chunk.usage) {
          st.usage = {
            type: 'usage',
            input_tokens: chunk.usage.prompt_tokens ?? 0,
            output_tokens: chunk.usage.completion_tokens ?? 0,
            cached_input_tokens: chunk.usage.prompt_tokens_details?.cached_tokens ?? 0,
          };
        }
        const events: ModelStreamEvent[] = [];
        for (const choice of chunk.choices ?? []) {
          if ((choice.index ?? 0) !== 0) continue;
          const d = choice.delta ?? {};
          if (typeof d.content === 'string' && d.content !== '') {
            st.outChars += d.content.length;
            events.push({ type: 'text_delta', text: d.content });
          }
          if (typeof d.refusal === 'string') st.refusal += d.refusal;
          for (const f of d.tool_calls ?? []) {
            const idx = f.index ?? 0;
            const c = calls.get(idx) ?? { name: '', args: '' };
            if (f.id) c.id = f.id;
            if (f.function?.name) c.name += f.function.name;
            if (f.function?.arguments) c.args += f.function.arguments;
            calls.set(idx, c);
          }
          if (choice.finish_reason) st.finish = choice.finish_reason;
        }
        return events;
      };

      while (!st.done) {
        let r: Awaited<ReturnType<typeof reader.read>>;
        try {
          r = await reader.read();
        } catch (err) {
          if (guard.signal.aborted) throw timeoutError();
          throw new ModelError('model_error', `model stream broke: ${(err as Error).message}`, true);
        }
        const msgs = r.done ? [...parser.push(decoder.decode()), ...parser.flush()] : parser.push(decoder.decode(r.value, { stream: true }));
        for (const m of msgs) for (const e of handle(m.data)) yield e;
        if (guard.signal.aborted) throw timeoutError();
        if (r.done) break;
      }

      if (st.finish === 'content_filter' || (st.refusal && calls.size === 0 && st.outChars === 0)) {
        throw new ModelError('model_refusal', st.refusal ? `the model refused: ${st.refusal}` : 'the model output was blocked by the content filter');
      }
      if (!st.done && st.finish === null) throw new ModelError('model_error', 'model stream ended early', true);
      for (const [, c] of [...calls.entries()].sort((a, b) => a[0] - b[0])) {
        if (!c.name) throw new ModelError('model_error', 'model sent a tool call without a name', true);
        st.outChars += c.name.length + c.args.length;
        yield { type: 'tool_call', ...(c.id ? { id: c.id } : {}), name: c.name, arguments: parseArguments(c.args) };
      }
      yield st.usage ?? {
        type: 'usage',
        input_tokens: estimateTokens(inputChars(request.messages) + request.instructions.length),
        output_tokens: estimateTokens(st.outChars),
      };
    } finally {
      guard.dispose();
      if (reader) await reader.cancel().catch(() => undefined);
    }
  }
}
