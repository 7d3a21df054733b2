import type { ContentPart } from '../../agents/domain/model-provider';
import type { MessageProps } from '../../sessions/domain/message';
import { InputProblem } from './input-events';
import { ItemSource, itemPosition, itemsPage, placedItemsOfMessage } from './openai-resources';

const ulid = (n: number) => `01JD2Z4Q8M3K7P6W9X0Y${String(n).padStart(6, '0')}`;

function msg(n: number, role: MessageProps['role'], content: ContentPart[], runId = 'run_1'): MessageProps {
  const at = new Date(1_700_000_000_000 + n);
  return { id: `msg_${ulid(n)}`, tenantId: 't', subjectId: 's', sessionId: 'sess_1', runId, role, status: 'completed', sequence: n, content, metadata: {}, createdAt: at, updatedAt: at };
}

const call = (id: string): ContentPart => ({ type: 'tool_call', tool_call_id: id, tool_name: 'lookup', arguments: { q: id } });
const result = (id: string): ContentPart => ({ type: 'tool_result', tool_call_id: id, tool_name: 'lookup', ok: true, result: { id } }) as ContentPart;

/** A session of `turns` turns: user, assistant (text + two calls), two tool results, assistant answer; a system message in between. */
function history(turns: number): MessageProps[] {
  const out: MessageProps[] = [];
  let n = 1;
  for (let t = 0; t < turns; t++) {
    // Call ids repeat across turns (a model may reuse them): item ids must not.
    out.push(msg(n++, 'user', [{ type: 'text', text: `q${t}` }]));
    out.push(msg(n++, 'assistant', [{ type: 'text', text: 'looking' }, call('call_a'), call('call_b')]));
    out.push(msg(n++, 'tool', [result('call_a')]));
    out.push(msg(n++, 'system', [{ type: 'text', text: 'no item' }]));
    out.push(msg(n++, 'tool', [result('call_b')]));
    out.push(msg(n++, 'assistant', [call('call_c')])); // a tool-calling turn without text: no message item
    out.push(msg(n++, 'tool', [result('call_c')]));
    out.push(msg(n++, 'assistant', [{ type: 'text', text: `a${t}` }]));
  }
  return out;
}

/** An in-memory source that reads like the keyset query: after a message, in order, at most `limit`; counts the reads. */
function sourceOf(all: MessageProps[], order: 'asc' | 'desc') {
  const sorted = order === 'asc' ? [...all] : [...all].reverse();
  const reads: number[] = [];
  const source: ItemSource = {
    message: async (id) => all.find((m) => m.id === id) ?? null,
    messages: async (after, limit) => {
      reads.push(limit);
      const start = after === undefined ? 0 : sorted.findIndex((m) => m.id === after) + 1;
      return { items: sorted.slice(start, start + limit), hasMore: start + limit < sorted.length };
    },
  };
  return { source, reads };
}

async function walk(all: MessageProps[], order: 'asc' | 'desc', limit: number, after?: string): Promise<{ ids: string[]; pages: number }> {
  const { source } = sourceOf(all, order);
  const ids: string[] = [];
  let pages = 0;
  for (let cursor = after; ; ) {
    const page = await itemsPage(source, cursor, limit, order);
    pages++;
    expect(page.data.length).toBeLessThanOrEqual(limit);
    ids.push(...page.data.map((i) => i.id));
    if (!page.has_more) return { ids, pages };
    expect(page.data.length).toBe(limit);
    cursor = page.data[page.data.length - 1].id;
  }
}

describe('OpenAI items: ids are positions, pages are keyset reads', () => {
  const all = history(5);
  const flat = all.flatMap((m) => placedItemsOfMessage(m).map((p) => p.item.id));

  it('names items by message and content part, unique even when call ids repeat', () => {
    const [, assistant, tool, , , callsOnly] = all;
    expect(placedItemsOfMessage(assistant).map((p) => [p.part, p.item.type, p.item.id])).toEqual([
      [-1, 'message', assistant.id],
      [1, 'function_call', `fc_${ulid(2)}_1`],
      [2, 'function_call', `fc_${ulid(2)}_2`],
    ]);
    expect(placedItemsOfMessage(tool).map((p) => [p.item.type, p.item.id, (p.item as any).call_id])).toEqual([['function_call_output', `fco_${ulid(3)}_0`, 'call_a']]);
    expect(placedItemsOfMessage(callsOnly).map((p) => p.item.type)).toEqual(['function_call']);
    expect(new Set(flat).size).toBe(flat.length);
    expect(flat).toHaveLength(5 * 9); // per turn: user, message + 2 calls, 2 outputs, a call, its output, the answer
    expect(itemPosition(`fc_${ulid(2)}_2`)).toEqual({ messageId: assistant.id, part: 2, kind: 'fc' });
    expect(itemPosition(assistant.id)).toEqual({ messageId: assistant.id, part: -1, kind: 'message' });
    expect(itemPosition('call_a')).toBeNull();
  });

  it.each([1, 2, 3, 7, 100])('limit %i: asc and desc walk every item exactly once, in order', async (limit) => {
    expect((await walk(all, 'asc', limit)).ids).toEqual(flat);
    expect((await walk(all, 'desc', limit)).ids).toEqual([...flat].reverse());
  });

  it('after any item (mid-message included) goes on from the next one, both orders', async () => {
    for (const [i, id] of flat.entries()) {
      expect((await walk(all, 'asc', 3, id)).ids).toEqual(flat.slice(i + 1));
      expect((await walk(all, 'desc', 3, id)).ids).toEqual(flat.slice(0, i).reverse());
    }
  });

  it('a page reads about limit + 1 messages, not the whole history', async () => {
    const { source, reads } = sourceOf(history(200), 'asc');
    const page = await itemsPage(source, undefined, 5, 'asc');
    expect(page.has_more).toBe(true);
    expect(reads.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(12);
  });

  it('an after that is no item of the list is 400 (param after)', async () => {
    const { source } = sourceOf(all, 'asc');
    for (const bad of ['call_a', `fc_${ulid(1)}_0`, `fco_${ulid(2)}_1`, `msg_${ulid(999)}`, 'nonsense']) {
      await expect(itemsPage(source, bad, 2, 'asc')).rejects.toBeInstanceOf(InputProblem);
    }
    await expect(itemsPage(source, `fc_${ulid(1)}_0`, 2, 'asc')).rejects.toMatchObject({ param: 'after' });
  });
});
