import type { JSONValue, LanguageModelV4FunctionTool, LanguageModelV4Message, LanguageModelV4Prompt, LanguageModelV4TextPart, LanguageModelV4FilePart } from '@ai-sdk/provider';
import { ModelAttachment, ModelMessage, ToolSpec } from '../../domain/model-provider';

function attachmentText(a: ModelAttachment): string {
  const head = `[attachment ${a.attachment_id}: ${a.filename} (${a.media_type}, ${a.size_bytes} bytes)]`;
  return typeof a.text === 'string' ? `${head}\n${a.text}` : head;
}

/** JSON as stored (our tool results) is JSON the provider sends: undefined becomes null. */
function jsonValue(v: unknown): JSONValue {
  return v === undefined ? null : (v as JSONValue);
}

/**
 * Our call (CONTRACT section 6 parts) as the provider specification's prompt (`LanguageModelV4Prompt`,
 * what `streamText` hands a provider's `doStream` after its own conversion): the instructions as the
 * first system message; attachments as a text header (with bounded text) and, for images, a file
 * part with the base64 data; assistant tool calls with their arguments; tool results as JSON outputs.
 * The provider packages turn this into each wire format.
 */
export function toProviderPrompt(instructions: string, messages: ModelMessage[], attachments: ModelAttachment[]): LanguageModelV4Prompt {
  const byId = new Map(attachments.map((a) => [a.attachment_id, a]));
  const out: LanguageModelV4Message[] = [];
  if (instructions.trim()) out.push({ role: 'system', content: instructions });
  for (const m of messages) {
    switch (m.role) {
      case 'system': {
        const text = m.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n');
        if (text) out.push({ role: 'system', content: text });
        break;
      }
      case 'user': {
        const parts: Array<LanguageModelV4TextPart | LanguageModelV4FilePart> = [];
        for (const p of m.content) {
          if (p.type === 'text') parts.push({ type: 'text', text: p.text });
          else if (p.type === 'attachment_ref') {
            const a = byId.get(p.attachment_id);
            if (!a) parts.push({ type: 'text', text: `[attachment ${p.attachment_id}: not available]` });
            else {
              parts.push({ type: 'text', text: attachmentText(a) });
              if (a.image_base64) parts.push({ type: 'file', data: { type: 'data', data: a.image_base64 }, mediaType: a.media_type });
            }
          }
        }
        if (parts.length === 0) parts.push({ type: 'text', text: '' });
        out.push({ role: 'user', content: parts });
        break;
      }
      case 'assistant': {
        const text = m.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
        const content: Extract<LanguageModelV4Message, { role: 'assistant' }>['content'] = text ? [{ type: 'text', text }] : [];
        for (const p of m.content) if (p.type === 'tool_call') content.push({ type: 'tool-call', toolCallId: p.tool_call_id, toolName: p.tool_name, input: p.arguments ?? {} });
        if (content.length) out.push({ role: 'assistant', content });
        break;
      }
      case 'tool': {
        const content: Extract<LanguageModelV4Message, { role: 'tool' }>['content'] = [];
        for (const p of m.content) {
          if (p.type !== 'tool_result') continue;
          content.push({ type: 'tool-result', toolCallId: p.tool_call_id, toolName: p.tool_name, output: { type: 'json', value: jsonValue(p.ok ? (p.result ?? null) : { error: p.error ?? null }) } });
        }
        if (content.length) out.push({ role: 'tool', content });
        break;
      }
    }
  }
  return out;
}

/** Our tool specs as the provider specification's function tools. */
export function toProviderTools(tools: readonly ToolSpec[]): LanguageModelV4FunctionTool[] {
  return tools.map((t) => ({ type: 'function', name: t.name, description: t.description, inputSchema: t.parameters as LanguageModelV4FunctionTool['inputSchema'] }));
}
