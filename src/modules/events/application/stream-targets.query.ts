import { Query } from '@nestjs/cqrs';

/** Which of these run ids still exist (a deleted session takes its runs along). Answered by the runs module. */
export class ExistingRunsQuery extends Query<string[]> {
  constructor(readonly ids: string[]) {
    super();
  }
}

/** Which of these session ids still exist. Answered by the sessions module. */
export class ExistingSessionsQuery extends Query<string[]> {
  constructor(readonly ids: string[]) {
    super();
  }
}
