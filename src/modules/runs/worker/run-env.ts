import { createHash, randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Clock } from '../../../common/clock/clock';
import { AppConfig } from '../../../common/config/app-config';
import { newId } from '../../../common/ids/ids';
import { AgentTool, HANDOFF_PREFIX } from '../../agents/domain/agent-definition';
import { ToolSpec } from '../../agents/domain/model-provider';
import { ToolRegistry } from '../../agents/domain/tool';
import { ApprovalsPort } from '../application/approvals-port';
import { Run } from '../domain/run.aggregate';
import { DecideEnv } from '../domain/run-decider';
import { Execution } from './execution';

/** What an execution's decisions and effects know besides the run: the clock, ids, the run's tools, approvals. */
@Injectable()
export class RunEnv {
  constructor(
    private readonly config: AppConfig,
    private readonly tools: ToolRegistry,
    private readonly approvals: ApprovalsPort,
    private readonly clock: Clock,
  ) {}

  /**
   * A tool of the run's agent version: its pinned definition (http, mcp and function tools,
   * built-ins as the version listed them), else a built-in by name (runs whose agent is gone).
   */
  toolOf(ex: Execution | undefined, name: string): AgentTool | null {
    const pinned = ex?.agent?.resolvedTools.find((t) => t.name === name);
    if (pinned) return pinned.binding.kind === 'builtin' ? { ...(this.tools.get(name) ?? pinned), binding: pinned.binding } : pinned;
    // A handoff or subagent tool exists only as the agent in control pinned it (CONTRACT 16).
    if (name.startsWith(HANDOFF_PREFIX) || SUBAGENT_TOOLS.has(name)) return null;
    const t = this.tools.get(name);
    return t ? { ...t, binding: { kind: 'builtin' } } : null;
  }

  /** RUN_LEASE_MS: what a model call's spend reservation lives without a heartbeat (it dies with the lease). */
  get leaseMs(): number {
    return this.config.runLeaseMs;
  }

  /** What the decider needs besides the run: the clock, ids and the agent's tools. */
  of(run: Run, ex?: Execution): DecideEnv {
    const clientTools = run.state.client_tools;
    return {
      now: this.clock.now(),
      newId,
      tool: (name) => {
        // The run's agent version's tools (built-in, http, mcp, function), else a built-in by name.
        const t = this.toolOf(ex, name);
        if (t) {
          return {
            risk: t.risk,
            executor: t.executor,
            idempotent: t.idempotent,
            ...(t.pause ? { pause: t.pause } : {}),
            ...(t.callbackTimeoutMs !== undefined ? { callback_timeout_ms: t.callbackTimeoutMs } : {}),
            ...(t.binding.kind === 'handoff' ? { handoff: { id: t.binding.agent_id, version: t.binding.version, model: t.binding.model } } : {}),
            ...(t.binding.kind === 'subagents'
              ? { subagent: { op: t.binding.op, agents: t.binding.agents ? t.binding.agents.map((a) => ({ id: a.agent_id, version: a.version })) : null, max_concurrent: t.binding.max_concurrent } }
              : {}),
          };
        }
        // A client tool of this run (declared with its request): the client executes it.
        return clientTools?.some((c) => c.name === name) ? { risk: 'auto', executor: 'client', idempotent: false } : null;
      },
      approvalsAvailable: this.approvals.available,
      approvalTtlMs: this.config.approvalTtlMs,
      inputTtlMs: this.config.inputTtlMs,
      newSecret,
    };
  }

  /** The tools the model is offered: the agent version's, then the run's own client tools. */
  toolSpecs(run: Run, ex: Execution): ToolSpec[] {
    const specs: ToolSpec[] = (ex.agent?.resolvedTools ?? [])
      .map((t) => this.toolOf(ex, t.name))
      .filter((t): t is NonNullable<typeof t> => t !== null)
      .map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
    for (const c of run.state.client_tools ?? []) if (!specs.some((t) => t.name === c.name)) specs.push({ name: c.name, description: c.description, parameters: c.parameters });
    return specs;
  }
}

const SUBAGENT_TOOLS = new Set(['create_subagent', 'send_subagent_input', 'wait_for_subagents', 'close_subagent']);

/** A callback token (256 random bits, base64url) and its SHA-256 (hex): only the hash is stored. */
function newSecret(): { token: string; hash: string } {
  const token = `cbt_${randomBytes(32).toString('base64url')}`;
  return { token, hash: createHash('sha256').update(token, 'utf8').digest('hex') };
}
