import { canSee, Principal } from '../../../common/auth/principal';
import { DomainError } from '../../../common/errors/domain-error';
import { Run } from '../domain/run.aggregate';
import { RunReadView, RunRepository } from '../domain/run.repository';

export function runNotFound(id: string): DomainError {
  return new DomainError('run_not_found', 'run not found', { run_id: id });
}

/** The run if the caller may see it; otherwise exactly the 404 of a missing id. */
export async function loadOwnedRun(repo: RunRepository, principal: Principal, id: string): Promise<Run> {
  const run = await repo.findById(id);
  if (!run) throw runNotFound(id);
  const o = run.owner;
  if (!canSee(principal, { tenantId: o.tenantId, subjectId: o.subjectId })) throw runNotFound(id);
  return run;
}

/** The run's read view (row + stream counters, one read) if the caller may see it; otherwise the 404 of a missing id. */
export async function loadOwnedRunView(repo: RunRepository, principal: Principal, id: string): Promise<RunReadView> {
  const view = await repo.findView(id);
  if (!view || !canSee(principal, { tenantId: view.run.tenantId, subjectId: view.run.subjectId })) throw runNotFound(id);
  return view;
}
