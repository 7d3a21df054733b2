import { Injectable, Logger, Optional } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { DomainError } from '../../../../common/errors/domain-error';
import { DemoTicketStore } from '../../domain/demo-ticket.store';
import { AgentTool } from '../../domain/agent-definition';
import { AttachmentReader, FollowUpScheduler, ToolContext, ToolDefinition, ToolOutcome, ToolRegistry } from '../../domain/tool';
import { validateArguments } from './ajv-validator';
import { ExternalTools } from './external-tools';
import { AbortedError, raceAbort, withDeadline } from '../abort';
import { buildDemoTools, ToolFailure, ToolImplementation } from './demo-tools';
import { buildPauseTools } from './pause-tools';
import { validateJson } from './json-schema';

function definitionOf(t: ToolImplementation): ToolDefinition {
  const { run: _run, ...def } = t;
  return def;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * The built-in server tools of CONTRACT section 9. `execute` never throws: validation, lookup,
 * timeouts and failures all come back as outcomes the loop shows to the model.
 */
@Injectable()
export class DefaultToolRegistry extends ToolRegistry {
  private readonly logger = new Logger('Tools');
  private readonly tools: Map<string, ToolImplementation>;

  constructor(
    tickets: DemoTicketStore,
    @Optional() private readonly attachmentReader?: AttachmentReader,
    @Optional() private readonly moduleRef?: ModuleRef,
    @Optional() private readonly external?: ExternalTools,
  ) {
    super();
    this.tools = new Map([...buildDemoTools({ tickets, attachments: () => this.reader(), followUps: () => this.followUps() }), ...buildPauseTools()].map((t) => [t.name, t]));
  }

  /** The injected reader, else one registered by any module (the attachments module), else none. */
  private reader(): AttachmentReader | null {
    if (this.attachmentReader) return this.attachmentReader;
    try {
      return this.moduleRef?.get(AttachmentReader, { strict: false }) ?? null;
    } catch {
      return null;
    }
  }

  /** The automations module's follow-up scheduler (registered by that module), else none. */
  private followUps(): FollowUpScheduler | null {
    try {
      return this.moduleRef?.get(FollowUpScheduler, { strict: false }) ?? null;
    } catch {
      return null;
    }
  }

  /** http and mcp tools of an agent version: the same outcomes, through the outbound client. */
  private async executeExternal(tool: AgentTool, args: unknown, ctx: ToolContext): Promise<ToolOutcome> {
    const b = tool.binding;
    if (b.kind === 'function') return fail('tool_failed', `client tool: "${tool.name}" is executed by the client, not the server`);
    // The run's decider hands the run over; a call that reaches the registry is not a handoff.
    if (b.kind === 'handoff' || b.kind === 'subagents') return fail('tool_failed', `${tool.name} is performed by the run itself; it is not executed`);
    const problems = validateArguments(tool.parameters, args);
    if (problems.length) return fail('invalid_tool_arguments', problems.join('; '));
    if (!this.external) return fail('tool_failed', `${tool.name}: external tools are not available`);
    const deadline = Math.min(Date.now() + tool.timeoutMs, ctx.deadline);
    if (ctx.signal.aborted) return fail('tool_timeout', `${tool.name} was cancelled`);
    const clean = structuredClone(args);
    if (b.kind === 'http') return this.external.callHttp(tool, b, clean, ctx, deadline);
    if (b.kind === 'mcp') return this.external.callMcp(tool, b, clean, ctx, deadline);
    return fail('tool_not_found', `no tool named "${tool.name}"`);
  }

  get(name: string): ToolDefinition | null {
    const t = this.tools.get(name);
    return t ? definitionOf(t) : null;
  }

  all(): ToolDefinition[] {
    return [...this.tools.values()].map(definitionOf);
  }

  override async execute(name: string, args: unknown, ctx: ToolContext, resolved?: AgentTool): Promise<ToolOutcome> {
    if (resolved && resolved.binding.kind !== 'builtin') return this.executeExternal(resolved, args, ctx);
    const tool = this.tools.get(name);
    if (!tool) return fail('tool_not_found', `no tool named "${name}"`);
    if (tool.executor === 'client') return fail('tool_failed', `client tool: "${name}" is executed by the client, not the server`);
    const problems = validateJson(tool.parameters, args);
    if (problems.length) return fail('invalid_tool_arguments', problems.join('; '));

    const started = Date.now();
    const deadline = Math.min(started + tool.timeoutMs, ctx.deadline);
    const guard = withDeadline(ctx.signal, deadline);
    try {
      if (guard.signal.aborted) throw new AbortedError('aborted');
      const result = await raceAbort(tool.run(structuredClone(args as Record<string, unknown>), { ...ctx, signal: guard.signal, deadline }), guard.signal);
      return { ok: true, result: toJson(result) };
    } catch (err) {
      if (err instanceof AbortedError || guard.signal.aborted) {
        const why = guard.deadlineHit() ? `timed out after ${Math.max(0, deadline - started)} ms` : 'was cancelled';
        return fail('tool_timeout', `${name} ${why}`);
      }
      if (err instanceof ToolFailure) return fail('tool_failed', err.message, err.retryable);
      if (err instanceof DomainError) return fail('tool_failed', `${err.code}: ${err.message}`);
      this.logger.error(`tool ${name} crashed: ${(err as Error)?.stack ?? String(err)}`);
      return fail('tool_failed', `${name} failed unexpectedly`, true);
    } finally {
      guard.dispose();
    }
  }
}

function fail(code: 'tool_failed' | 'tool_timeout' | 'tool_not_found' | 'invalid_tool_arguments', message: string, retryable = false): ToolOutcome {
  return { ok: false, error: { code, message, retryable } };
}

/** Results are data for the model and the event log: plain JSON only. */
function toJson(v: unknown): unknown {
  if (v === undefined) return null;
  const out = JSON.parse(JSON.stringify(v)) as unknown;
  return isPlainObject(out) || Array.isArray(out) ? out : { value: out };
}
