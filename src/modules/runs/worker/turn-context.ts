import { Injectable, Optional } from '@nestjs/common';
import { ModelCatalog, maxOutputTokensOf } from '../../agents/domain/model-catalog';
import { ContentPart, estimateTokens, inputChars, ModelAttachment, ModelMessage } from '../../agents/domain/model-provider';
import { AttachmentReader } from '../../agents/domain/tool';
import { MessageRepository } from '../../sessions/domain/message.repository';
import { contextOf } from '../domain/model-context';
import { Run } from '../domain/run.aggregate';
import { NextCallEstimate } from '../domain/run-decider';
import { Execution } from './execution';

const MAX_ATTACHMENTS_IN_CONTEXT = 10;
const ATTACHMENT_TEXT_BYTES = 32 * 1024;

/**
 * The reads a model turn makes besides the run: its context from the session's history (which
 * part is `contextOf`'s rule), the attachments it references, the next call's cost estimate and
 * the text a crashed turn left.
 */
@Injectable()
export class TurnContext {
  constructor(
    private readonly messages: MessageRepository,
    @Optional() private readonly attachments?: AttachmentReader,
    @Optional() private readonly modelCatalog?: ModelCatalog,
  ) {}

  /** The session's history up to this run's input plus what the run added (not input of runs queued behind it). */
  async read(run: Run): Promise<ModelMessage[]> {
    const snap = run.propsForPersistence();
    const history = await this.messages.history(snap.sessionId);
    return contextOf(history, snap).map((m) => ({ role: m.role, content: m.content }));
  }

  /** The content of the message a crashed or cancelled turn left open (none: empty). */
  async openMessageContent(id: string): Promise<ContentPart[]> {
    const msg = await this.messages.findById(id);
    return msg?.content ?? [];
  }

  /** The attachments the context references (the newest MAX_ATTACHMENTS_IN_CONTEXT), gone ones left out. */
  async attachmentsOf(owner: { tenantId: string; subjectId: string }, messages: ModelMessage[]): Promise<ModelAttachment[]> {
    if (!this.attachments) return [];
    const ids = new Set<string>();
    for (const m of messages) for (const p of m.content) if (p.type === 'attachment_ref') ids.add(p.attachment_id);
    const out: ModelAttachment[] = [];
    for (const id of [...ids].slice(-MAX_ATTACHMENTS_IN_CONTEXT)) {
      try {
        const a = await this.attachments.read(owner, id, ATTACHMENT_TEXT_BYTES);
        const att: ModelAttachment = { attachment_id: a.attachment_id, filename: a.filename, media_type: a.media_type, size_bytes: a.size_bytes };
        if (a.text !== undefined) att.text = a.text;
        if (a.media_type.startsWith('image/') && a.bytes) att.image_base64 = a.bytes.toString('base64');
        out.push(att);
      } catch {
        // Gone since the run was accepted (deleted or expired): the model sees only the reference.
      }
    }
    return out;
  }

  /** The model's price per token (none: the call costs nothing). */
  priceOf(model: string) {
    return this.modelCatalog?.get(model)?.price;
  }

  /**
   * The next model call's estimate for `limits.max_cost` and the tenant's spend limit (only runs
   * with one, or `always`: under a limit, pay for it): its
   * input as the scripted model counts it (characters / 4 of the instructions and the context,
   * steered input not taken yet included: the turn would take it), the model's output cap and
   * price. This execution's context when it has one, else the history (not kept: the turn reads
   * it again after its own events).
   */
  async nextCallEstimate(run: Run, ex: Execution, opts: { always?: boolean } = {}): Promise<NextCallEstimate | undefined> {
    const snap = run.propsForPersistence();
    if ((!snap.limits.max_cost && !opts.always) || (snap.status !== 'running' && snap.status !== 'queued')) return undefined;
    let messages: ModelMessage[] | undefined = snap.inbox.length === 0 ? ex.context : undefined;
    if (!messages) {
      const history = await this.messages.history(snap.sessionId);
      const taking = { ...snap, state: { ...snap.state, inputs: [...snap.state.inputs, ...snap.inbox.map((i) => ({ message_id: i.message_id, before: null }))] } };
      messages = contextOf(history, taking).map((m) => ({ role: m.role, content: m.content }));
    }
    const entry = this.modelCatalog?.get(snap.model);
    return {
      input_tokens: estimateTokens(inputChars(messages) + (ex.agent?.instructions ?? '').length),
      max_output_tokens: maxOutputTokensOf(entry),
      ...(entry?.price ? { price: entry.price } : {}),
    };
  }
}
