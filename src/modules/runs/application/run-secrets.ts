import { Injectable } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ResolvedSecret, SecretScrubber } from '../../../common/secrets/secret-scrubber';
import { RecordRunSecretsCommand } from '../../secrets/application/commands/record-run-secrets/record-run-secrets.command';
import { RunSecretValuesQuery } from '../../secrets/application/queries/run-secret-values/run-secret-values.query';
import type { Observation } from '../domain/run-decider';

/**
 * The scrubbing rule's run side (the secrets module keeps the values): which values a run
 * resolved, recorded before a call goes out and read back as a `SecretScrubber` wherever an
 * observation of the run arrives, on any node.
 */
@Injectable()
export class RunSecrets {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  /** Every value the runs `runIds` resolved (every version), as one scrubber. */
  async scrubberOf(tenantId: string, runIds: readonly string[]): Promise<SecretScrubber> {
    const values = await this.queries.execute(new RunSecretValuesQuery(tenantId, runIds));
    return values.length ? new SecretScrubber(values) : SecretScrubber.none;
  }

  /** Records what a run resolved (durably, before the outbound request that carries it). */
  async record(run: { tenantId: string; runId: string; sessionId: string }, values: readonly ResolvedSecret[]): Promise<void> {
    if (values.length) await this.commands.execute(new RecordRunSecretsCommand(run.tenantId, run.runId, run.sessionId, values));
  }
}

/** The observations that carry outside text into a run: only these are scrubbed (and read the run's values). */
export function carriesOutsideText(o: Observation): boolean {
  switch (o.type) {
    case 'tool_finished':
    case 'callback_received':
    case 'client_tool_outputs':
    case 'input_answered':
    case 'subagent_ended':
    case 'subagent_approval_requested':
    case 'model_turn_ended':
    case 'interrupted_turn_read':
      return true;
    case 'approval_decided':
      return o.reason !== null && o.reason !== '';
    default:
      return false;
  }
}

const scrubError = <E extends { message: string } | undefined>(s: SecretScrubber, e: E): E => (e ? { ...e, message: s.text(e.message) } : e);

/**
 * THE one scrubbing step: an observation with every resolved value of the run masked, before the
 * decider sees it - so nothing it decides (events, messages, the run's state, the model's next
 * prompt, the audit trail, webhooks, every compatible surface) can carry the raw value. Every
 * path a tool result or tool error takes is an observation here: sync http and MCP results and
 * errors (`tool_finished`), callbacks, client tool outputs, `ask_user` answers, approval reasons,
 * a subagent's final text, and the model's own output.
 */
export function scrubObservation(o: Observation, s: SecretScrubber): Observation {
  if (s.empty) return o;
  switch (o.type) {
    case 'tool_finished':
      return { ...o, result: o.result.ok ? { ...o.result, result: s.json(o.result.result) } : { ...o.result, error: scrubError(s, o.result.error) } };
    case 'callback_received':
      return { ...o, ...(o.output !== undefined ? { output: s.json(o.output) } : {}), ...(o.error ? { error: scrubError(s, o.error) } : {}) };
    case 'client_tool_outputs':
      return { ...o, outputs: o.outputs.map((x) => ({ ...x, ...(x.output !== undefined ? { output: s.json(x.output) } : {}), ...(x.error ? { error: scrubError(s, x.error) } : {}) })) };
    case 'input_answered':
      return { ...o, text: s.text(o.text) };
    case 'approval_decided':
      return { ...o, reason: o.reason === null ? null : s.text(o.reason) };
    case 'subagent_ended':
      return { ...o, outcome: { ...o.outcome, text: o.outcome.text === null ? null : s.text(o.outcome.text) } };
    case 'subagent_approval_requested':
      return { ...o, approval: { ...o.approval, arguments: s.json(o.approval.arguments) } };
    case 'model_turn_ended':
      return { ...o, text: s.text(o.text), tool_calls: o.tool_calls.map((c) => ({ ...c, arguments: s.json(c.arguments) })), ...(o.failure ? { failure: scrubError(s, o.failure) } : {}) };
    case 'interrupted_turn_read':
      return { ...o, content: s.json(o.content) };
    default:
      return o;
  }
}
