import { ContentPart } from '../../agents/domain/model-provider';

export type MessageRole = 'user' | 'assistant' | 'tool' | 'system';
export type MessageStatus = 'pending' | 'streaming' | 'completed' | 'failed' | 'cancelled';

/** One entry of a session's history (CONTRACT section 6). Deltas are never messages. */
export interface MessageProps {
  id: string;
  tenantId: string;
  subjectId: string;
  sessionId: string;
  runId: string | null;
  role: MessageRole;
  status: MessageStatus;
  sequence: number;
  content: ContentPart[];
  metadata: Record<string, string>;
  createdAt: Date;
  updatedAt: Date;
}

export type NewMessage = Omit<MessageProps, 'sequence' | 'createdAt' | 'updatedAt'>;

/** A message write that can ride on another write (a run save): a new message or a change to one. */
export type MessageWrite =
  | { kind: 'append'; message: NewMessage }
  | { kind: 'update'; id: string; changes: { status?: MessageStatus; content?: ContentPart[] } };

