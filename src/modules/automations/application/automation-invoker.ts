import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { Principal } from '../../../common/auth/principal';
import { AppConfig } from '../../../common/config/app-config';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { DomainError } from '../../../common/errors/domain-error';
import { newId } from '../../../common/ids/ids';
import { CreateRunCommand } from '../../runs/application/commands/create-run/create-run.command';
import { CreateSessionCommand } from '../../sessions/application/commands/create-session/create-session.command';
import { AutomationInvocation, AutomationProps, dueSlots } from '../domain/automation';
import { AutomationClock } from '../domain/automation-clock';
import { AutomationRepository } from '../domain/automation.repository';

/** Automations claimed per statement, and queued invocations delivered per tick. */
const CLAIM_BATCH = 100;
const DELIVER_BATCH = 100;

/** The webhook event of a failed invocation (CONTRACT section 14 / 17). */
export const INVOCATION_FAILED = 'automation.invocation_failed';

/**
 * Fires automations (CONTRACT section 17), on every node that runs workers. Each tick (every
 * AUTOMATION_POLL_MS, and at once after a "run now") has two steps:
 *
 * 1. Claim: in one transaction, lock the automations due at the clock's now (FOR UPDATE SKIP
 *    LOCKED), record each due slot as an invocation (UNIQUE (automation_id, slot): a slot is
 *    recorded once however many nodes race) - `queued` if younger than AUTOMATION_CATCHUP_MS,
 *    else `skipped` (`missed`; older slots missed while no node was up are one more skipped
 *    record) - and move `next_run_at` to the next slot (a one-time automation completes).
 * 2. Deliver: each queued invocation is locked (SKIP LOCKED) and delivered in ONE transaction
 *    with its effect: the new session (target `new_session`) and the run with the input, created
 *    through the sessions and runs modules' commands as the automation's owner, and the
 *    invocation marked `started`. A node that dies in between leaves it queued (nothing
 *    committed) and another node delivers it: exactly once. A refusal (session archived or
 *    busy with `reject`, agent gone, quota) marks it `failed` with the error, and writes the
 *    `automation.invocation_failed` integration event (webhooks) in the same statement.
 */
@Injectable()
export class AutomationInvoker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Automations');
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(
    private readonly repo: AutomationRepository,
    private readonly uow: UnitOfWork,
    private readonly commands: CommandBus,
    private readonly clock: AutomationClock,
    private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.workerEnabled) return;
    this.timer = setInterval(() => void this.tick(), this.config.automationPollMs);
    this.timer.unref();
    void this.tick(); // catch-up at start-up
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.ticking;
  }

  /** A manual invocation was queued: deliver it now (on this node, unless another takes it first). */
  deliverSoon(_invocationId: string): void {
    if (this.config.workerEnabled) void this.tick();
  }

  /** One claim + deliver pass; overlapping calls run one more pass after the current one. */
  async tick(): Promise<void> {
    if (this.ticking) {
      this.again = true;
      return this.ticking;
    }
    const run = (async () => {
      do {
        this.again = false;
        try {
          await this.claimDue();
          await this.deliverQueued();
        } catch (err) {
          this.logger.warn(`automation tick failed (the next one retries): ${(err as Error).message}`);
        }
      } while (this.again && !this.stopped);
    })();
    this.ticking = run;
    try {
      await run;
    } finally {
      this.ticking = null;
    }
  }

  private async claimDue(): Promise<void> {
    for (;;) {
      const now = this.clock.date();
      if (!(await this.repo.anyDue(now))) return;
      const n = await this.uow.run(async () => {
        const due = await this.repo.lockDue(now, CLAIM_BATCH);
        for (const a of due) await this.claim(a, now);
        return due.length;
      });
      if (n < CLAIM_BATCH) return;
    }
  }

  private async claim(a: AutomationProps, now: Date): Promise<void> {
    const d = dueSlots(a.schedule, a.nextRunAt!, now, this.config.automationCatchupMs);
    const base = { automationId: a.id, tenantId: a.tenantId, source: 'schedule' as const, runId: null, sessionId: a.target.type === 'session' ? a.target.sessionId : null, createdAt: now, updatedAt: now };
    if (d.missedBefore) {
      await this.repo.insertInvocation({
        ...base,
        id: newId('ainv'),
        slot: d.missedBefore.slot,
        status: 'skipped',
        skipReason: 'missed',
        error: { code: 'missed', message: `${d.missedBefore.count ?? 'more than 1000'} slot(s) from ${d.missedBefore.slot.toISOString()} on passed while no node was up; only the newest one counts` },
      });
    }
    if (d.fire) await this.repo.insertInvocation({ ...base, id: newId('ainv'), slot: d.fire, status: 'queued', skipReason: null, error: null });
    if (d.skip) {
      await this.repo.insertInvocation({
        ...base,
        id: newId('ainv'),
        slot: d.skip,
        status: 'skipped',
        skipReason: 'missed',
        error: { code: 'missed', message: `the slot was older than AUTOMATION_CATCHUP_MS (${this.config.automationCatchupMs} ms) when a node first saw it` },
      });
    }
    await this.repo.advance(a.id, d.next, d.next ? 'active' : 'completed', now);
  }

  private async deliverQueued(): Promise<void> {
    for (;;) {
      const ids = await this.repo.queued(DELIVER_BATCH);
      let delivered = 0;
      for (const id of ids) {
        if (this.stopped) return;
        if (await this.deliver(id)) delivered++;
      }
      // Only queued rows another node holds (or that failed transiently) are left: the next tick sees them.
      if (ids.length < DELIVER_BATCH || delivered === 0) return;
    }
  }

  /** Delivers one queued invocation; false if another node has it or it is no longer queued. */
  async deliver(id: string): Promise<boolean> {
    let sessionId: string | null = null;
    try {
      return await this.uow.run(async () => {
        const inv = await this.repo.lockQueued(id);
        if (!inv) return false;
        const a = await this.repo.find(inv.automationId);
        if (!a) return false; // deleted: its invocations went with it
        const owner: Principal = { tenantId: a.tenantId, subjectId: a.subjectId, role: a.ownerRole, keyId: `automation:${a.id}` };
        if (a.target.type === 'new_session') {
          const s = await this.commands.execute(new CreateSessionCommand(owner, { agentId: a.target.agentId, metadata: a.target.metadata }));
          sessionId = s.id;
        } else {
          sessionId = a.target.sessionId;
        }
        const { run } = await this.commands.execute(
          new CreateRunCommand(owner, sessionId, { content: a.input.content, metadata: { automation_id: a.id, automation_invocation_id: inv.id } }),
        );
        await this.repo.markStarted(inv.id, run.id, sessionId, this.clock.date());
        return true;
      });
    } catch (err) {
      if (!(err instanceof DomainError)) {
        this.logger.warn(`automation invocation ${id} not delivered (retried on the next tick): ${(err as Error).message}`);
        return false;
      }
      await this.fail(id, { code: err.code, message: err.message }, null);
      return true;
    }
  }

  private async fail(id: string, error: { code: string; message: string }, sessionId: string | null): Promise<void> {
    const inv: AutomationInvocation | null = await this.repo.findInvocationById(id);
    if (!inv) return;
    await this.repo.markFailed(id, error, sessionId, this.clock.date(), {
      tenantId: inv.tenantId,
      type: INVOCATION_FAILED,
      objectId: id,
      payload: { automation_id: inv.automationId, error },
    });
  }
}
