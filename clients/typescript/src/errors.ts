// Errors as typed values: every failure the client reports is a CMPayError
// subclass with the server's extensions as fields, so callers branch with
// `instanceof` and never parse a message.
import type { Payment, Refund } from './types.js';

/** One error of a GraphQL response, as the server sent it. */
export interface GraphQLErrorBody {
  message: string;
  path?: ReadonlyArray<string | number>;
  extensions?: Record<string, unknown>;
}

/** Options every CMPayError takes. */
export interface CMPayErrorOptions {
  /** The server's extensions.code, or the client's own code for local failures. */
  code: string;
  /** True when sending the same request again, with the same key, may succeed. */
  retryable?: boolean;
  /** The GraphQL error's extensions, as sent. */
  extensions?: Record<string, unknown>;
  /** The idempotency key of the operation that failed, when there was one. */
  idempotencyKey?: string;
  /** The HTTP status of the answer, when there was one. */
  httpStatus?: number;
  cause?: unknown;
}

/**
 * The base of every error the client throws. `pending` says whether the
 * operation is still in storage: true when no final answer came (the
 * network, a timeout, a 503), so resumePending() will send it again with
 * the same key; false when the server gave a final answer.
 */
export class CMPayError extends Error {
  /** The server's extensions.code, or one of the client's own codes (NETWORK_ERROR, TIMEOUT, ...). */
  readonly code: string;
  /** True when sending the same request again, with the same key, may succeed. */
  readonly retryable: boolean;
  /** The GraphQL error's extensions, as sent ({} for the client's own errors). */
  readonly extensions: Record<string, unknown>;
  /** The idempotency key of the operation that failed, when there was one. */
  idempotencyKey?: string;
  /** The HTTP status of the last answer, when there was one. */
  readonly httpStatus?: number;
  /** True while the operation stays in storage for resumePending(). */
  pending = false;

  constructor(message: string, opts: CMPayErrorOptions) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = new.target.name;
    this.code = opts.code;
    this.retryable = opts.retryable ?? false;
    this.extensions = opts.extensions ?? {};
    this.idempotencyKey = opts.idempotencyKey;
    this.httpStatus = opts.httpStatus;
  }
}

/** IDEMPOTENCY_KEY_REUSED: the key was first used for another operation, payment or parameters. Nothing was done. */
export class KeyReusedError extends CMPayError {
  /** The parameters that differ from the key's first use: operation, paymentId, amount, currency, method, capture, reason... */
  readonly differingFields: string[];
  /** The payment the key belongs to, when the server named it. */
  readonly paymentId?: string;
  /** True when the client refused before sending: its storage holds the key for other parameters. */
  readonly local: boolean;

  constructor(message: string, opts: CMPayErrorOptions & { differingFields: string[]; paymentId?: string; local?: boolean }) {
    super(message, opts);
    this.differingFields = opts.differingFields;
    this.paymentId = opts.paymentId;
    this.local = opts.local ?? false;
  }
}

/** PAYMENT_STATE_CONFLICT: the payment's status does not allow the operation. Nothing was done; the key stays unused. */
export class StateConflictError extends CMPayError {
  /** The payment's current status. */
  readonly status: string;
  /** A capture or cancel still waiting for the processor's answer, when that is the conflict (contract v3). */
  readonly pendingOperation?: string;

  constructor(message: string, opts: CMPayErrorOptions & { status: string; pendingOperation?: string }) {
    super(message, opts);
    this.status = opts.status;
    this.pendingOperation = opts.pendingOperation;
  }
}

/** AMOUNT_EXCEEDS_AVAILABLE: more than can be captured or refunded. Nothing was done; the key stays unused. */
export class AmountExceedsAvailableError extends CMPayError {
  /** What is available, as a Decimal string. */
  readonly available: string;

  constructor(message: string, opts: CMPayErrorOptions & { available: string }) {
    super(message, opts);
    this.available = opts.available;
  }
}

/**
 * The processor declined the payment (status DECLINED, contract v3): no money
 * moved, and the key stays bound to the declined payment, so a new try needs
 * a new key.
 */
export class DeclinedError extends CMPayError {
  /** The processor's most specific code, e.g. "card_declined", "insufficient_funds". */
  readonly declineCode: string | null;
  /** The declined payment, when the answer carried it. */
  readonly payment?: Payment;
  /** The declined payment's id. */
  readonly paymentId?: string;

  constructor(message: string, opts: CMPayErrorOptions & { declineCode: string | null; payment?: Payment; paymentId?: string }) {
    super(message, opts);
    this.declineCode = opts.declineCode;
    this.payment = opts.payment;
    this.paymentId = opts.paymentId ?? opts.payment?.id;
  }
}

/** PROCESSOR_REFUSED: the processor refused a capture, cancel or refund (contract v3). Nothing was applied. */
export class ProcessorRefusedError extends CMPayError {
  /** The processor's code for the refusal. */
  readonly processorCode: string | null;

  constructor(message: string, opts: CMPayErrorOptions & { processorCode: string | null }) {
    super(message, opts);
    this.processorCode = opts.processorCode;
  }
}

/** A refund the processor answered FAILED (contract v3): no money went back, and its amount is available again. */
export class RefundFailedError extends CMPayError {
  /** The processor's code for the failure. */
  readonly failureCode: string | null;
  /** The failed refund. */
  readonly refund: Refund;
  /** The payment as it is now. */
  readonly payment: Payment;

  constructor(message: string, opts: CMPayErrorOptions & { refund: Refund; payment: Payment }) {
    super(message, opts);
    this.refund = opts.refund;
    this.payment = opts.payment;
    this.failureCode = opts.refund.failureCode ?? null;
  }
}

/** BAD_USER_INPUT: the request's input is invalid. Nothing was written. */
export class BadUserInputError extends CMPayError {
  /** The first field the server named. */
  readonly field?: string;
  /** Every problem the server listed, field by field. */
  readonly problems: Array<{ field: string; message: string }>;

  constructor(message: string, opts: CMPayErrorOptions) {
    super(message, opts);
    const ext = opts.extensions ?? {};
    this.field = typeof ext.field === 'string' ? ext.field : undefined;
    this.problems = Array.isArray(ext.problems) ? (ext.problems as Array<{ field: string; message: string }>) : [];
  }
}

/** NOT_FOUND: no such payment. */
export class NotFoundError extends CMPayError {}

/** UNAUTHENTICATED (missing or wrong token) or FORBIDDEN (beyond the token's scopes or client). */
export class AuthError extends CMPayError {}

/**
 * The server could not be reached, or did not answer in time, or answered
 * that it is briefly unavailable (SERVICE_UNAVAILABLE, 503, 5xx), on every
 * try. Whether the operation happened is unknown: it stays in storage, and
 * resumePending() sends it again with the same key.
 */
export class UnavailableError extends CMPayError {
  /** How many requests were sent. */
  readonly attempts: number;

  constructor(message: string, opts: CMPayErrorOptions & { attempts: number }) {
    super(message, { ...opts, retryable: true });
    this.attempts = opts.attempts;
  }
}

/**
 * A stored operation older than nine tenths of idempotencyKeyTTL (the
 * server's key TTL less a margin for clock changes) that the client did not
 * send again: the server may have forgotten its key, nothing
 * made under the key was found, and sending it now is not known to be safe (a
 * refund a day late may follow one made another way since). Nothing was done,
 * and it left storage: make the call again if it is still wanted.
 */
export class ExpiredOperationError extends CMPayError {
  /** The operation, as the schema's Operation enum names it. */
  readonly operation: string;
  /** When its key was stored (RFC 3339). */
  readonly startedAt: string;

  constructor(message: string, opts: CMPayErrorOptions & { operation: string; startedAt: string }) {
    super(message, opts);
    this.operation = opts.operation;
    this.startedAt = opts.startedAt;
  }
}

/** The caller's AbortSignal fired. The operation stays in storage: the request may have reached the server. */
export class AbortedError extends CMPayError {}

/** The storage adapter failed to write the key: nothing was sent. */
export class StorageError extends CMPayError {}

/** waitForSettled's timeout passed before the payment settled. */
export class WaitTimeoutError extends CMPayError {
  /** The payment as last seen. */
  readonly payment?: Payment;

  constructor(message: string, opts: CMPayErrorOptions & { payment?: Payment }) {
    super(message, opts);
    this.payment = opts.payment;
  }
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/**
 * Codes whose answer may change when the same request is sent again. A
 * 409 "in progress" answer (another request with the key is executing, as
 * Stripe and the IETF draft answer) is among them, under the names servers
 * use for it.
 */
export const retryableCodes: ReadonlySet<string> = new Set([
  'SERVICE_UNAVAILABLE',
  'INTERNAL_SERVER_ERROR',
  'IDEMPOTENCY_KEY_IN_PROGRESS',
  'IDEMPOTENCY_CONCURRENT_REQUEST',
  'REQUEST_IN_PROGRESS',
  'RATE_LIMITED',
]);

/** fromGraphQLError maps one error of a GraphQL response to its typed error. */
export function fromGraphQLError(e: GraphQLErrorBody, httpStatus?: number): CMPayError {
  const ext = e.extensions ?? {};
  const code = str(ext.code) ?? 'UNKNOWN';
  const opts: CMPayErrorOptions = { code, extensions: ext, httpStatus, retryable: retryableCodes.has(code) };
  switch (code) {
    case 'IDEMPOTENCY_KEY_REUSED':
      return new KeyReusedError(e.message, {
        ...opts,
        differingFields: Array.isArray(ext.differingFields) ? ext.differingFields.map(String) : [],
        paymentId: str(ext.paymentId),
      });
    case 'PAYMENT_STATE_CONFLICT':
      return new StateConflictError(e.message, {
        ...opts,
        status: str(ext.status) ?? '',
        pendingOperation: str(ext.pendingOperation),
      });
    case 'AMOUNT_EXCEEDS_AVAILABLE':
      return new AmountExceedsAvailableError(e.message, { ...opts, available: str(ext.available) ?? '' });
    case 'PAYMENT_DECLINED':
      return new DeclinedError(e.message, {
        ...opts,
        declineCode: str(ext.declineCode) ?? null,
        paymentId: str(ext.paymentId),
      });
    case 'PROCESSOR_REFUSED':
      return new ProcessorRefusedError(e.message, { ...opts, processorCode: str(ext.processorCode) ?? null });
    case 'BAD_USER_INPUT':
      return new BadUserInputError(e.message, opts);
    case 'NOT_FOUND':
      return new NotFoundError(e.message, opts);
    case 'UNAUTHENTICATED':
    case 'FORBIDDEN':
      return new AuthError(e.message, opts);
    default:
      return new CMPayError(e.message, opts);
  }
}
