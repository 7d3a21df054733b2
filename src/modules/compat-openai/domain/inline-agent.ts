import { InputProblem } from './input-events';

/** What the native inline session configuration takes (CONTRACT section 13). */
export interface InlineAgentInput {
  model: string;
  instructions?: string;
  tools: Array<{ type: 'function'; name: string; description?: string; parameters: Record<string, unknown> }>;
  /** `multi_agent` (CONTRACT 16): the native `subagents` (the four subagent tools; a subagent runs this same configuration). */
  subagents?: { enabled: true; max_concurrent?: number };
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const absent = (v: unknown) => v === undefined || v === null;

const AGENT_FIELDS = ['model', 'instructions', 'tools', 'reasoning', 'service_tier', 'text', 'multi_agent', 'compaction', 'experimental'];
const FUNCTION_FIELDS = ['type', 'name', 'description', 'parameters', 'async', 'defer_loading'];

/**
 * The SDK's inline `agent` of session creation (`SessionCreateParams.Agent`) as our inline
 * configuration: `model`, `instructions` and `function` tools (executed by the client: the
 * turn waits for a `tool_result` answering each call). Anything this server cannot honour is a
 * 400 naming the parameter, never silently ignored; settings equal to what the session reports
 * back (`service_tier: "default"`, `text.format: {type: "text"}`, null reasoning) are accepted.
 * `multi_agent: {enabled: true, max_concurrent_subagents?}` is the native `subagents: {enabled: true,
 * max_concurrent?}` (CONTRACT 16: the tools create_subagent, send_subagent_input,
 * wait_for_subagents, close_subagent; a subagent runs this same inline configuration);
 * `{enabled: false}` is no subagents. The checks of the values themselves (a known model, a name, a
 * compilable JSON Schema) are the native configuration's.
 */
export function parseInlineAgent(raw: unknown, withAgentId: boolean): InlineAgentInput {
  if (withAgentId) {
    throw new InputProblem(
      'agent together with agent_id (overriding a saved agent for one session) is not supported by this server: pass either agent_id, or an inline agent with a model',
      'agent',
    );
  }
  if (!isObj(raw)) throw new InputProblem('agent must be an object', 'agent');
  for (const k of Object.keys(raw)) {
    if (!AGENT_FIELDS.includes(k)) throw new InputProblem(`agent.${k} is not a field of an inline agent`, `agent.${k}`);
  }
  if (typeof raw.model !== 'string' || raw.model === '') throw new InputProblem('agent.model is required for an inline agent (without agent_id)', 'agent.model');
  if (!absent(raw.instructions) && typeof raw.instructions !== 'string') throw new InputProblem('agent.instructions must be a string', 'agent.instructions');
  if (!absent(raw.reasoning)) {
    if (!isObj(raw.reasoning) || Object.values(raw.reasoning).some((v) => !absent(v))) {
      throw new InputProblem("agent.reasoning is not supported by this server: omit it (or pass null) to use the model's defaults", 'agent.reasoning');
    }
  }
  if (!absent(raw.service_tier) && raw.service_tier !== 'auto' && raw.service_tier !== 'default') {
    throw new InputProblem(`agent.service_tier ${JSON.stringify(raw.service_tier)} is not supported by this server: omit it, or use "auto" or "default"`, 'agent.service_tier');
  }
  if (!absent(raw.text)) {
    const text = raw.text;
    const plain =
      isObj(text) &&
      Object.keys(text).every((k) => k === 'format' || k === 'verbosity') &&
      (absent(text.format) || (isObj(text.format) && text.format.type === 'text' && Object.keys(text.format).length === 1)) &&
      (absent(text.verbosity) || text.verbosity === 'medium');
    if (!plain) throw new InputProblem('agent.text is not supported by this server: only plain text output ({"format": {"type": "text"}})', 'agent.text');
  }
  let subagents: InlineAgentInput['subagents'];
  if (!absent(raw.multi_agent)) {
    const m = raw.multi_agent;
    if (!isObj(m) || typeof m.enabled !== 'boolean') throw new InputProblem('agent.multi_agent must be {"enabled": true|false, "max_concurrent_subagents"?: n}', 'agent.multi_agent');
    for (const k of Object.keys(m)) {
      if (k !== 'enabled' && k !== 'max_concurrent_subagents') throw new InputProblem(`agent.multi_agent.${k} is not a field of multi_agent`, `agent.multi_agent.${k}`);
    }
    const max = m.max_concurrent_subagents;
    // The bound (1..32) is the native configuration's; its field error is renamed to this param.
    if (!absent(max) && (typeof max !== 'number' || !Number.isInteger(max))) {
      throw new InputProblem('agent.multi_agent.max_concurrent_subagents must be an integer', 'agent.multi_agent.max_concurrent_subagents');
    }
    if (m.enabled) subagents = { enabled: true, ...(typeof max === 'number' ? { max_concurrent: max } : {}) };
  }
  if (raw.compaction !== undefined) throw new InputProblem('agent.compaction is not supported by this server: omit it', 'agent.compaction');
  if (raw.experimental !== undefined && !(isObj(raw.experimental) && Object.keys(raw.experimental).length === 0)) {
    throw new InputProblem('agent.experimental settings are not supported by this server: omit them', 'agent.experimental');
  }

  const tools: InlineAgentInput['tools'] = [];
  if (!absent(raw.tools)) {
    if (!Array.isArray(raw.tools)) throw new InputProblem('agent.tools must be an array of tools', 'agent.tools');
    raw.tools.forEach((t, i) => {
      const p = `agent.tools[${i}]`;
      if (!isObj(t)) throw new InputProblem(`${p} must be a tool object`, p);
      if (t.type !== 'function') {
        throw new InputProblem(
          `${p}: tool type ${JSON.stringify(t.type ?? null)} is not supported in an inline agent: only "function" tools (answered by the client with tool_result events). ` +
            'MCP servers and HTTP tools are part of an agent defined with POST /v1/agents, used by its agent_id',
          `${p}.type`,
        );
      }
      for (const k of Object.keys(t)) if (!FUNCTION_FIELDS.includes(k)) throw new InputProblem(`${p}.${k} is not a field of a function tool`, `${p}.${k}`);
      if (t.async === true) throw new InputProblem(`${p}.async: functions the agent does not wait for are not supported by this server; omit it or pass false`, `${p}.async`);
      if (t.defer_loading === true) throw new InputProblem(`${p}.defer_loading: deferred tools (tool search) are not supported by this server; omit it or pass false`, `${p}.defer_loading`);
      if (typeof t.name !== 'string') throw new InputProblem(`${p}.name is required`, `${p}.name`);
      if (!absent(t.description) && typeof t.description !== 'string') throw new InputProblem(`${p}.description must be a string`, `${p}.description`);
      if (!isObj(t.parameters)) throw new InputProblem(`${p}.parameters must be a JSON Schema object`, `${p}.parameters`);
      tools.push({ type: 'function', name: t.name, ...(typeof t.description === 'string' ? { description: t.description } : {}), parameters: t.parameters });
    });
  }
  return { model: raw.model, ...(typeof raw.instructions === 'string' ? { instructions: raw.instructions } : {}), tools, ...(subagents ? { subagents } : {}) };
}
