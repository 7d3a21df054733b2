/**
 * The receipt of an accepted input (CONTRACT section 7): where the message went. `started`: it
 * started a new run that is the session's active one; `queued`: a new run queued behind the
 * session's active run (enqueue, interrupt); `steered`: handed to the active run; `followed_up`:
 * steered, but its run ended before taking it, so the follow-up run took it over; `rejected`: it
 * will never be taken (its queued run was refused when it was due to start: `access_revoked`).
 * `runId` always names the run that took or will take the message; `takenAt` is when a model turn
 * of that run took it (null before).
 */
export type InputDisposition = 'started' | 'steered' | 'queued' | 'followed_up' | 'rejected';

export const INPUT_DISPOSITIONS: readonly InputDisposition[] = ['started', 'steered', 'queued', 'followed_up', 'rejected'];

export interface InputReceipt {
  id: string;
  tenantId: string;
  subjectId: string;
  sessionId: string;
  messageId: string;
  disposition: InputDisposition;
  runId: string;
  takenAt: Date | null;
  createdAt: Date;
}
