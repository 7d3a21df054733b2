import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Multipart, MultipartFile } from '@fastify/multipart';
import { Controller, Delete, Get, HttpCode, Param, Post, Req, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { RouteConfig } from '@nestjs/platform-fastify';
import {
  ApiAcceptedResponse,
  ApiBearerAuth,
  ApiBody,
  ApiConsumes,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiProduces,
  ApiTags,
} from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CurrentPrincipal } from '../../../common/auth/auth.decorators';
import { Principal } from '../../../common/auth/principal';
import { AppConfig } from '../../../common/config/app-config';
import { DomainError } from '../../../common/errors/domain-error';
import { ApiErrors } from '../../../common/errors/error.dto';
import { ApiIdempotencyKey } from '../../../common/http/api-docs.decorators';
import { IdempotentExecutor } from '../../idempotency/application/idempotent-executor';
import { isValidIdempotencyKey } from '../../idempotency/domain/fingerprint';
import { AttachmentUploads, ReceivedUpload, UploadTooLarge, payloadTooLarge } from '../application/attachment-uploads.service';
import { DeleteAttachmentCommand } from '../application/commands/delete-attachment/delete-attachment.command';
import { GetAttachmentQuery } from '../application/queries/get-attachment/get-attachment.query';
import { AttachmentContent, GetAttachmentContentQuery } from '../application/queries/get-attachment-content/get-attachment-content.query';
import { ATTACHMENT_PURPOSES, AttachmentPurpose } from '../domain/attachment.aggregate';
import { contentDisposition } from '../domain/filename';
import { AttachmentResponseDto, toAttachmentResponse } from './dto/attachment.response.dto';

/** Route config read by the app's multipart guard: only routes that set it accept multipart bodies. */
export const ACCEPTS_MULTIPART = { multipart: true };

function invalid(field: string, message: string): DomainError {
  return new DomainError('invalid_request', message, { errors: [{ field, message }] });
}

/** The multipart file stream, failing as soon as the parser truncated it at the size cap. */
async function* capped(part: MultipartFile): AsyncIterable<Buffer> {
  for await (const chunk of part.file) {
    if (part.file.truncated) throw new UploadTooLarge();
    yield chunk as Buffer;
  }
  if (part.file.truncated) throw new UploadTooLarge();
}

/** Errors of @fastify/multipart and busboy, mapped to the contract. */
function multipartError(err: unknown, maxBytes: number): unknown {
  const code = (err as { code?: string } | null)?.code;
  if (code === 'FST_REQ_FILE_TOO_LARGE') return payloadTooLarge(maxBytes);
  if (code === 'FST_FILES_LIMIT' || code === 'FST_PARTS_LIMIT' || code === 'FST_FIELDS_LIMIT') {
    return invalid('body', 'one file part named `file` and at most the field `purpose` are accepted');
  }
  if (code === 'FST_MP_PREMATURE_CLOSE' || code === 'FST_PROTO_VIOLATION' || code === 'FST_INVALID_MULTIPART_CONTENT_TYPE') {
    return invalid('body', 'malformed multipart body');
  }
  if (err instanceof Error && !(err instanceof DomainError) && /multipart|boundary|Unexpected end of form|part header|Malformed/i.test(err.message)) {
    return invalid('body', 'malformed multipart body');
  }
  return err;
}

/** How long a client that keeps sending after an early answer (e.g. 413) is given before its connection is cut. */
const DRAIN_GRACE_MS = 30_000;

/**
 * The answer came before the whole body was read (size cap, invalid form). Reading stops holding
 * anything: the rest is discarded as it arrives (memory stays flat), so the client can finish
 * sending and read the answer; the connection is not reused, and cut if the client keeps going.
 */
function discardRestOfBody(req: FastifyRequest, reply: FastifyReply): void {
  if (!reply.sent) reply.header('connection', 'close');
  const raw = req.raw;
  raw.removeAllListeners('data');
  raw.unpipe();
  raw.resume();
  const timer = setTimeout(() => raw.socket?.destroy(), DRAIN_GRACE_MS);
  timer.unref();
  raw.once('end', () => clearTimeout(timer));
  raw.once('close', () => clearTimeout(timer));
}

@ApiTags('Attachments')
@ApiBearerAuth('api-key')
@Controller('v1/attachments')
export class AttachmentsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    private readonly idempotent: IdempotentExecutor,
    private readonly uploads: AttachmentUploads,
    private readonly config: AppConfig,
  ) {}

  @Post()
  @RouteConfig(ACCEPTS_MULTIPART)
  @ApiOperation({
    summary: 'Upload an attachment',
    description:
      'multipart/form-data with one file part `file` and an optional field `purpose` (default `agent_input`). The file is streamed to ' +
      'storage (sha256 and size computed on the way) with a hard cap of `ATTACHMENT_MAX_BYTES` (default 10 MiB): over it, 413 ' +
      '`payload_too_large` and nothing is stored. Answers 202 with status `scanning`; the scan runs in the background. Poll ' +
      '`GET /v1/attachments/{id}` until `ready` (or `rejected`, with `rejection_reason`). `Idempotency-Key` is required; the ' +
      "fingerprint covers the file's sha256, the filename and the purpose. The client's Content-Type of the part is only a hint.",
  })
  @ApiConsumes('multipart/form-data')
  @ApiBody({
    schema: {
      type: 'object',
      required: ['file'],
      properties: {
        file: { type: 'string', format: 'binary', description: 'The file. Its name is sanitised; storage names are generated.' },
        purpose: { type: 'string', enum: [...ATTACHMENT_PURPOSES], default: 'agent_input' },
      },
    },
  })
  @ApiIdempotencyKey(true)
  @ApiAcceptedResponse({
    type: AttachmentResponseDto,
    description: 'Stored; the scan runs in the background. `Location` names the attachment.',
    headers: { Location: { description: '/v1/attachments/{id}', schema: { type: 'string' } } },
  })
  @ApiErrors('invalid_request', 'idempotency_key_required', 'idempotency_conflict', 'idempotency_in_progress', 'payload_too_large', 'unsupported_media_type')
  async upload(@CurrentPrincipal() principal: Principal, @Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    let upload: ReceivedUpload | null = null;
    try {
      if (!req.isMultipart()) throw new DomainError('unsupported_media_type', 'uploads are multipart/form-data', { expected: 'multipart/form-data' });
      // Decided before a byte of the body is read.
      const header = req.headers['idempotency-key'];
      const key = Array.isArray(header) ? header[0] : header;
      // Present but empty is a malformed key, not a missing one (see IdempotentExecutor).
      if (key === undefined) throw new DomainError('idempotency_key_required', 'this operation requires an Idempotency-Key header');
      if (!isValidIdempotencyKey(key)) throw invalid('Idempotency-Key', 'must be 1..255 printable ASCII characters');

      const maxBytes = this.config.attachmentMaxBytes;
      let purpose: string | undefined;
      try {
        const parts: AsyncIterableIterator<Multipart> = req.parts({
          // The plugin is registered with throwFileSizeLimit: a truncated file is an error, never a short file.
          limits: { fileSize: maxBytes, files: 1, fields: 4, fieldSize: 1024, parts: 5, headerPairs: 100 },
        });
        for await (const part of parts) {
          if (part.type === 'file') {
            if (part.fieldname !== 'file') throw invalid(part.fieldname, 'the file part must be named `file`');
            upload = await this.uploads.receive(principal, { filename: part.filename, declaredType: part.mimetype, content: capped(part) });
          } else if (part.fieldname === 'purpose') {
            purpose = String(part.value);
          } else {
            throw invalid(part.fieldname, `unknown field ${part.fieldname}`);
          }
        }
      } catch (err) {
        throw multipartError(err, maxBytes);
      }
      if (!upload) throw invalid('file', 'a file part named `file` is required');
      const chosen = (purpose ?? 'agent_input') as AttachmentPurpose;
      if (!ATTACHMENT_PURPOSES.includes(chosen)) throw invalid('purpose', `purpose must be one of ${ATTACHMENT_PURPOSES.join(', ')}`);
      const received = upload;
      const fingerprint = createHash('sha256').update(JSON.stringify([received.sha256, received.filename, chosen]), 'utf8').digest('hex');
      await this.idempotent.execute(req, reply, { required: true, fingerprint }, async () => {
        const a = await this.uploads.finalize(received, chosen);
        return { status: 202, body: toAttachmentResponse(a.snapshot()), headers: { location: `/v1/attachments/${a.id}` } };
      });
    } finally {
      // Too large, invalid, replayed or conflicting: the bytes of this request are not kept.
      if (upload) await this.uploads.discardIfUnfinished(upload).catch(() => undefined);
      if (!req.raw.readableEnded) discardRestOfBody(req, reply);
    }
  }

  @Get(':id')
  @ApiOperation({ summary: 'Get an attachment', description: "Only its owner sees it (admins: their tenant's); anyone else gets 404." })
  @ApiParam({ name: 'id', example: 'att_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' })
  @ApiOkResponse({ type: AttachmentResponseDto })
  @ApiErrors('attachment_not_found')
  async get(@CurrentPrincipal() principal: Principal, @Param('id') id: string): Promise<AttachmentResponseDto> {
    return toAttachmentResponse(await this.queries.execute(new GetAttachmentQuery(principal, id)));
  }

  @Get(':id/content')
  @ApiOperation({
    summary: 'Download the content',
    description:
      'Only while `ready`. Streamed with the detected Content-Type, Content-Length, `Content-Disposition: attachment` and ' +
      '`X-Content-Type-Options: nosniff`. The content is verified against its sha256 while streaming; a mismatch aborts the response.',
  })
  @ApiParam({ name: 'id', example: 'att_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' })
  @ApiProduces('application/octet-stream', ...['text/plain', 'application/pdf', 'image/png'])
  @ApiOkResponse({
    description: 'The bytes.',
    schema: { type: 'string', format: 'binary' },
    headers: {
      'Content-Disposition': { description: "attachment; filename=\"...\"; filename*=UTF-8''...", schema: { type: 'string' } },
      'X-Content-Type-Options': { description: 'nosniff', schema: { type: 'string' } },
      'Content-Length': { schema: { type: 'integer' } },
    },
  })
  @ApiErrors('attachment_not_found', 'attachment_not_ready', 'attachment_expired', 'attachment_rejected')
  async content(@CurrentPrincipal() principal: Principal, @Param('id') id: string, @Res() reply: FastifyReply): Promise<void> {
    const { attachment: a, content }: AttachmentContent = await this.queries.execute(new GetAttachmentContentQuery(principal, id));
    reply
      .status(200)
      .header('content-type', a.mediaType.startsWith('text/') ? `${a.mediaType}; charset=utf-8` : a.mediaType)
      .header('content-length', String(a.sizeBytes))
      .header('content-disposition', contentDisposition(a.filename))
      .header('x-content-type-options', 'nosniff')
      .header('cache-control', 'private, no-store')
      .header('content-security-policy', "default-src 'none'; sandbox");
    await reply.send(Readable.from(content, { objectMode: false }));
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({
    summary: 'Delete an attachment',
    description:
      'Status `deleted` and the content removed; afterwards the id answers 404. Also removes rejected, failed and expired attachments; ' +
      'one still uploading or scanning answers 409 `attachment_not_ready` (retry).',
  })
  @ApiParam({ name: 'id', example: 'att_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' })
  @ApiNoContentResponse({ description: 'Deleted.' })
  @ApiErrors('attachment_not_found', 'attachment_not_ready')
  async remove(@CurrentPrincipal() principal: Principal, @Param('id') id: string): Promise<void> {
    await this.commands.execute(new DeleteAttachmentCommand(principal, id));
  }
}
