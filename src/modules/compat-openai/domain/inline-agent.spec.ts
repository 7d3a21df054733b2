import { InputProblem } from './input-events';
import { parseInlineAgent } from './inline-agent';

const problem = (raw: unknown, withAgentId = false): { message: string; param: string } => {
  try {
    parseInlineAgent(raw, withAgentId);
  } catch (e) {
    if (e instanceof InputProblem) return { message: e.message, param: e.param };
    throw e;
  }
  throw new Error('no problem reported');
};

describe('parseInlineAgent (the SDK inline agent as our inline configuration)', () => {
  const fn = { type: 'function', name: 'ask_user', description: 'Asks.', parameters: { type: 'object', properties: { q: { type: 'string' } } } };

  it('maps model, instructions and function tools; drops the settings equal to what sessions report', () => {
    expect(
      parseInlineAgent(
        {
          model: 'scripted',
          instructions: 'Be brief.',
          tools: [{ ...fn, async: false, defer_loading: false }],
          service_tier: 'default',
          reasoning: { effort: null, summary: null },
          text: { format: { type: 'text' }, verbosity: null },
          multi_agent: { enabled: false },
          experimental: {},
        },
        false,
      ),
    ).toEqual({ model: 'scripted', instructions: 'Be brief.', tools: [{ type: 'function', name: 'ask_user', description: 'Asks.', parameters: fn.parameters }] });
    expect(parseInlineAgent({ model: 'scripted', instructions: null, tools: null, reasoning: null, text: null }, false)).toEqual({ model: 'scripted', tools: [] });
  });

  it('multi_agent is the native subagents configuration (CONTRACT 16)', () => {
    expect(parseInlineAgent({ model: 'scripted', multi_agent: { enabled: true } }, false)).toEqual({ model: 'scripted', tools: [], subagents: { enabled: true } });
    expect(parseInlineAgent({ model: 'scripted', multi_agent: { enabled: true, max_concurrent_subagents: 3 } }, false).subagents).toEqual({ enabled: true, max_concurrent: 3 });
    expect(parseInlineAgent({ model: 'scripted', multi_agent: { enabled: false, max_concurrent_subagents: 3 } }, false).subagents).toBeUndefined();
    expect(problem({ model: 'scripted', multi_agent: { enabled: 1 } }).param).toBe('agent.multi_agent');
    expect(problem({ model: 'scripted', multi_agent: { enabled: true, max_concurrent_subagents: 1.5 } }).param).toBe('agent.multi_agent.max_concurrent_subagents');
    expect(problem({ model: 'scripted', multi_agent: { enabled: true, agents: [] } }).param).toBe('agent.multi_agent.agents');
  });

  it('refuses what it cannot honour, naming the param', () => {
    expect(problem({ model: 'scripted' }, true).param).toBe('agent');
    expect(problem('scripted').param).toBe('agent');
    expect(problem({}).param).toBe('agent.model');
    expect(problem({ model: 'scripted', instructions: 5 }).param).toBe('agent.instructions');
    expect(problem({ model: 'scripted', tools: {} }).param).toBe('agent.tools');
    expect(problem({ model: 'scripted', tools: ['get_time'] }).param).toBe('agent.tools[0]');
    expect(problem({ model: 'scripted', tools: [fn, { type: 'tool_search' }] })).toEqual({ param: 'agent.tools[1].type', message: expect.stringContaining('tool type "tool_search" is not supported') });
    expect(problem({ model: 'scripted', tools: [{ ...fn, strict: true }] }).param).toBe('agent.tools[0].strict');
    expect(problem({ model: 'scripted', tools: [{ ...fn, defer_loading: true }] }).param).toBe('agent.tools[0].defer_loading');
    expect(problem({ model: 'scripted', tools: [{ ...fn, name: 7 }] }).param).toBe('agent.tools[0].name');
    expect(problem({ model: 'scripted', tools: [{ ...fn, parameters: 'x' }] }).param).toBe('agent.tools[0].parameters');
    expect(problem({ model: 'scripted', service_tier: 'flex' }).param).toBe('agent.service_tier');
    expect(problem({ model: 'scripted', text: { format: { type: 'json_schema', schema: {} } } }).param).toBe('agent.text');
    expect(problem({ model: 'scripted', text: { verbosity: 'high' } }).param).toBe('agent.text');
    expect(problem({ model: 'scripted', compaction: null }).param).toBe('agent.compaction');
    expect(problem({ model: 'scripted', experimental: { time_awareness: true } }).param).toBe('agent.experimental');
  });
});
