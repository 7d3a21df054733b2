import { Injectable } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { Principal } from '../../common/auth/principal';
import { ContentPart } from '../agents/domain/model-provider';
import { Decision } from '../approvals/domain/approval.aggregate';
import { DecideApprovalCommand } from '../approvals/application/commands/decide-approval/decide-approval.command';
import { CancelRunCommand } from '../runs/application/commands/cancel-run/cancel-run.command';
import { CreateRunCommand, CreateRunInput, CreateRunResult } from '../runs/application/commands/create-run/create-run.command';
import { SubmitToolOutputsCommand, ToolOutputInput } from '../runs/application/commands/submit-tool-outputs/submit-tool-outputs.command';
import { GetRunViewQuery } from '../runs/application/queries/get-run-view/get-run-view.query';
import { RunProps } from '../runs/domain/run.aggregate';
import { RunReadView } from '../runs/domain/run.repository';
import { CreateSessionCommand } from '../sessions/application/commands/create-session/create-session.command';
import { GetSessionQuery } from '../sessions/application/queries/get-session/get-session.query';
import { SessionProps } from '../sessions/domain/session.aggregate';

/**
 * The native write side as an adapter sees it: the caller's session (visibility rules of the
 * native API: a foreign or missing session is the same 404) and runs, user input that starts a
 * turn when the session is idle and steers the active run otherwise (`concurrency: "steer"`) or
 * a run as the adapter asks for it, cancelling the active run, client tool outputs and approval
 * decisions. Every call is one native command or query.
 */
@Injectable()
export class SessionInputs {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  /** The caller's session, or 404 `session_not_found`. */
  session(principal: Principal, sessionId: string): Promise<Readonly<SessionProps>> {
    return this.queries.execute(new GetSessionQuery(principal, sessionId));
  }

  /** A session of a configured agent (`agentId`) or pinning an inline configuration (`agent`: model, instructions, built-in and function tools). */
  createSession(
    principal: Principal,
    input: { agentId?: string; agent?: { model?: string; instructions?: string; tools?: unknown[] }; title?: string | null; metadata?: Record<string, string> },
  ): Promise<Readonly<SessionProps>> {
    return this.commands.execute(new CreateSessionCommand(principal, input));
  }

  /** The session's active run (null when idle). */
  async activeRun(principal: Principal, session: Readonly<SessionProps>): Promise<Readonly<RunProps> | null> {
    if (!session.activeRunId) return null;
    return (await this.runView(principal, session.activeRunId)).run;
  }

  /** A run the caller may see and its last event sequence, or 404 `run_not_found`. */
  runView(principal: Principal, runId: string): Promise<RunReadView> {
    return this.queries.execute(new GetRunViewQuery(principal, runId));
  }

  /** Idle session: a new run; active run: the input steers it (taken into its next model turn). */
  submitMessage(principal: Principal, sessionId: string, content: ContentPart[], metadata?: Record<string, string>): Promise<CreateRunResult> {
    return this.startRun(principal, sessionId, { content, concurrency: 'steer', metadata });
  }

  /** The input as the native `POST /v1/sessions/{id}/runs` takes it (concurrency: the session's default unless given). */
  startRun(principal: Principal, sessionId: string, input: CreateRunInput): Promise<CreateRunResult> {
    return this.commands.execute(new CreateRunCommand(principal, sessionId, input));
  }

  /** Cancels the session's active run (honestly: a tool in flight stops first); false when idle. */
  async cancelActive(principal: Principal, sessionId: string): Promise<boolean> {
    const session = await this.session(principal, sessionId);
    if (!session.activeRunId) return false;
    await this.commands.execute(new CancelRunCommand(principal, session.activeRunId));
    return true;
  }

  submitToolOutputs(principal: Principal, runId: string, outputs: ToolOutputInput[]): Promise<Readonly<RunProps>> {
    return this.commands.execute(new SubmitToolOutputsCommand(principal, runId, outputs));
  }

  decideApproval(principal: Principal, runId: string, approvalId: string, decision: Decision, reason: string | null) {
    return this.commands.execute(new DecideApprovalCommand(principal, runId, approvalId, decision, reason));
  }
}
