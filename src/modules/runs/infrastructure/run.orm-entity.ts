import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { RunLimits, RunState, RunUsage, SteeredInput } from '../domain/run.aggregate';
import type { RunError, RunStatus, TerminationReason } from '../domain/run-status';

@Entity('runs')
export class RunOrmEntity {
  @PrimaryColumn('text') id!: string;
  @Column('text', { name: 'tenant_id' }) tenantId!: string;
  @Column('text', { name: 'subject_id' }) subjectId!: string;
  @Column('text', { name: 'session_id' }) sessionId!: string;
  @Column('text', { name: 'agent_id' }) agentId!: string;
  @Column('text', { name: 'agent_version' }) agentVersion!: string;
  @Column('text') model!: string;
  @Column('text') status!: RunStatus;
  @Column('text', { name: 'termination_reason', nullable: true }) terminationReason!: TerminationReason | null;
  @Column('jsonb', { nullable: true }) error!: RunError | null;
  @Column('text', { name: 'user_message_id' }) userMessageId!: string;
  @Column('text', { name: 'final_message_id', nullable: true }) finalMessageId!: string | null;
  @Column('integer', { name: 'step_count' }) stepCount!: number;
  @Column('jsonb') usage!: RunUsage;
  @Column('jsonb') limits!: RunLimits;
  @Column('jsonb') metadata!: Record<string, string>;
  @Column('jsonb') state!: RunState;
  @Column('jsonb') inbox!: SteeredInput[];
  @Column('integer') version!: number;
  @Column('text', { name: 'lease_owner', nullable: true }) leaseOwner!: string | null;
  @Column({ type: 'timestamptz', name: 'lease_expires_at', nullable: true }) leaseExpiresAt!: Date | null;
  @Column({ type: 'timestamptz', name: 'cancel_requested_at', nullable: true }) cancelRequestedAt!: Date | null;
  @Column({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
  @Column({ type: 'timestamptz', name: 'updated_at' }) updatedAt!: Date;
  @Column({ type: 'timestamptz', name: 'started_at', nullable: true }) startedAt!: Date | null;
  @Column({ type: 'timestamptz', name: 'finished_at', nullable: true }) finishedAt!: Date | null;
  @Column({ type: 'timestamptz', name: 'queue_expires_at' }) queueExpiresAt!: Date;
  /** When a waiting run is due to be looked at (its pause's `wake_at`); the due sweeper's claim moves it on. */
  @Column({ type: 'timestamptz', name: 'wake_at', nullable: true }) wakeAt!: Date | null;
}
