import type { ModelMessage } from '../../agents/domain/model-provider';
import type { ResolvedAgent } from '../../agents/domain/agent-definition';
import type { SecretScrubber } from '../../../common/secrets/secret-scrubber';

/** Why the loop stopped executing a run on this node. */
/**
 * `interrupted`: the database could not be reached mid-run (a pool wait, a dropped connection, a
 * query timeout); this node stopped as if it had crashed, and the run resumes elsewhere or here
 * once its lease runs out (recovery), instead of being failed by a transient outage.
 */
export type Exit = 'finished' | 'waiting' | 'lease_lost' | 'interrupted';

/** This node may no longer write the run (lease lost, run deleted, node shutting down): stop without writing. */
export class LeaseLost extends Error {}

/** One execution of one claimed run on this node: what its parts share while it lasts. */
export interface Execution {
  /** Aborted on a cancel and when the lease is lost: the model call or tool in flight stops. */
  abort: AbortController;
  cancelled: boolean;
  leaseLost: boolean;
  /** Input was steered to the run since its inbox was last read. */
  steered: boolean;
  /** Steered inputs the run knows of and has not taken (the heartbeat reports the stored count). */
  inboxKnown: number;
  /**
   * What the model saw in this execution's last turn plus the messages this execution committed
   * since (a completed assistant message, tool results), as a read of the history would give
   * them: the next turn does not read the history again. Cleared by a conflict (someone else
   * changed the run: the next turn reads).
   */
  context?: ModelMessage[];
  /** The run's pinned agent version with its tools (built-in, http, mcp, function), read once per execution. */
  agent?: ResolvedAgent | null;
  /**
   * Every secret value the run resolved (the scrubbing rule): read when the execution starts on a
   * run that already called tools (an earlier execution may have resolved some), then grown by
   * this execution's own resolutions - while it holds the lease nobody else resolves for the run.
   */
  secrets?: SecretScrubber;
  /** Values this execution has recorded already (name and value): recorded once each. */
  recordedSecrets?: Set<string>;
  /** The turn (its message id) whose model call holds a spend reservation: the heartbeat keeps it alive with the lease. */
  spendHeld?: string;
}

export function newExecution(): Execution {
  return { abort: new AbortController(), cancelled: false, leaseLost: false, steered: false, inboxKnown: 0 };
}
