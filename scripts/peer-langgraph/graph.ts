/**
 * The peer's side of B1 (issue 29): a LangGraph agent doing B1's scripted run - the model's first
 * turn calls `get_time`, its second streams a 200-character answer in 4-character chunks (no
 * delay). The model is scripted like the service's (`!script`), so both sides measure the server,
 * not a provider.
 */
import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, AIMessageChunk, type BaseMessage } from '@langchain/core/messages';
import { ChatGenerationChunk, type ChatResult } from '@langchain/core/outputs';
import { tool } from '@langchain/core/tools';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import { z } from 'zod';

const ANSWER = 'The time is now. '.repeat(12).slice(0, 200).padEnd(200, '.');
const CHUNK = 4;

let calls = 0;

class ScriptedModel extends BaseChatModel {
  _llmType(): string {
    return 'scripted';
  }

  /** The first turn of a run (no tool result yet) calls get_time; the next one answers. */
  private toolTurn(messages: BaseMessage[]): boolean {
    return messages[messages.length - 1]?.getType() !== 'tool';
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const message = this.toolTurn(messages)
      ? new AIMessage({ content: '', tool_calls: [{ id: `call_${++calls}`, name: 'get_time', args: {} }] })
      : new AIMessage({ content: ANSWER });
    return { generations: [{ text: typeof message.content === 'string' ? message.content : '', message }] };
  }

  async *_streamResponseChunks(messages: BaseMessage[], _options: this['ParsedCallOptions'], runManager?: CallbackManagerForLLMRun): AsyncGenerator<ChatGenerationChunk> {
    if (this.toolTurn(messages)) {
      const id = `call_${++calls}`;
      yield new ChatGenerationChunk({ text: '', message: new AIMessageChunk({ content: '', tool_call_chunks: [{ id, name: 'get_time', args: '{}', index: 0 }] }) });
      return;
    }
    for (let i = 0; i < ANSWER.length; i += CHUNK) {
      const text = ANSWER.slice(i, i + CHUNK);
      const chunk = new ChatGenerationChunk({ text, message: new AIMessageChunk({ content: text }) });
      yield chunk;
      // As the provider integrations do: the token reaches the stream's callbacks (LangGraph's "messages" mode).
      await runManager?.handleLLMNewToken(text, undefined, undefined, undefined, undefined, { chunk });
    }
  }
}

const getTime = tool(async () => new Date().toISOString(), { name: 'get_time', description: 'The current time (ISO 8601).', schema: z.object({}) });
const model = new ScriptedModel({});
const tools = new ToolNode([getTime]);

async function agent(state: typeof MessagesAnnotation.State) {
  return { messages: [await model.invoke(state.messages)] };
}

function next(state: typeof MessagesAnnotation.State): 'tools' | typeof END {
  const last = state.messages[state.messages.length - 1] as AIMessage;
  return last.tool_calls?.length ? 'tools' : END;
}

export const graph = new StateGraph(MessagesAnnotation).addNode('agent', agent).addNode('tools', tools).addEdge(START, 'agent').addConditionalEdges('agent', next).addEdge('tools', 'agent').compile();
