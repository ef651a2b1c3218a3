// The types callers see. They are the generated ones (src/gql, from
// schema.graphqls), widened by what contract v3 adds (PROCESSING, DECLINED,
// PENDING and EXPIRED statuses, declineCode, pendingOperation, nextAction,
// Refund.status) so that the client handles those answers before the schema
// has them. Once `npm run codegen` has run on the grown schema, the
// generated fragment carries the same fields and the widening adds nothing.
import type {
  CreatePaymentInput as GeneratedCreatePaymentInput,
  PaymentFieldsFragment,
  PaymentStatus as GeneratedPaymentStatus,
  RefundFieldsFragment,
} from './gql/graphql.js';

/** What a request asked to do, as the schema's Operation enum names it. */
export type Operation = 'CREATE_PAYMENT' | 'CAPTURE_PAYMENT' | 'CANCEL_PAYMENT' | 'REFUND_PAYMENT';

/** A payment's status: the schema's, and contract v3's. */
export type PaymentStatus = GeneratedPaymentStatus | 'PROCESSING' | 'DECLINED' | 'PENDING' | 'EXPIRED';

/** A refund's status (contract v3); absent from servers without processors, whose refunds succeed at once. */
export type RefundStatus = 'PROCESSING' | 'SUCCEEDED' | 'FAILED';

/** What the payer does next for a Pix or boleto payment (contract v3). */
export interface NextAction {
  type: 'PIX_CODE' | 'BOLETO';
  pixCode?: string | null;
  boletoLine?: string | null;
  hostedUrl?: string | null;
  expiresAt: string;
}

interface RefundV3 {
  status: RefundStatus;
  failureCode: string | null;
}

interface PaymentV3 {
  declineCode: string | null;
  pendingOperation: Operation | null;
  processor: string;
  processorReference: string | null;
  nextAction: NextAction | null;
  paidAt: string | null;
  expiredAt: string | null;
}

/** A refund, with every field the schema has; contract v3's fields are optional until the schema has them. */
export type Refund = RefundFieldsFragment & Partial<Omit<RefundV3, keyof RefundFieldsFragment>>;

/** A payment, with every field the schema has; contract v3's fields are optional until the schema has them. */
export type Payment = Omit<PaymentFieldsFragment, 'status' | 'refunds'> & {
  status: PaymentStatus;
  refunds: Refund[];
} & Partial<Omit<PaymentV3, keyof PaymentFieldsFragment>>;

/** createPayment's input, as the schema defines it. */
export type CreatePaymentInput = GeneratedCreatePaymentInput;

/** capturePayment's parameters. */
export interface CapturePaymentParams {
  paymentId: string;
  /** At most the authorized amount; omitted or null: all of it. */
  amount?: string | number | null;
}

/** cancelPayment's parameters. */
export interface CancelPaymentParams {
  paymentId: string;
}

/** refundPayment's parameters. */
export interface RefundPaymentParams {
  paymentId: string;
  /** At most capturedAmount - refundedAmount; omitted or null: all that is left. */
  amount?: string | number | null;
  reason?: string | null;
}

/** The parameters of each operation. */
export interface OperationParams {
  CREATE_PAYMENT: CreatePaymentInput;
  CAPTURE_PAYMENT: CapturePaymentParams;
  CANCEL_PAYMENT: CancelPaymentParams;
  REFUND_PAYMENT: RefundPaymentParams;
}

/**
 * An operation whose key is in storage: sent, or about to be, and without a
 * final answer yet.
 */
export type PendingOperation = {
  [O in Operation]: {
    operation: O;
    idempotencyKey: string;
    params: OperationParams[O];
    /** When the key was stored (RFC 3339). */
    startedAt: string;
    /**
     * When a try of it last left (RFC 3339), written before the try when it
     * leaves near the time the operation turns stale: a stale refund the
     * lookup does not find is declared not made only once no try can still
     * be applied by the server.
     */
    lastSentAt?: string;
    /**
     * The client (tab, process) that last stored it to send it: a client
     * forgets an operation on an answer that does not judge it only while
     * storage still names it here, so that no other client's try is lost.
     */
    sender?: string;
    /**
     * True on a tombstone: an operation settled whose removal from storage
     * failed, written in its place so that no client sends it again (a
     * refusal leaves its key unused on the server). Clients skip it, and
     * resumePending() removes it; pending() never lists it. A tombstone
     * keeps the operation, key and startedAt only: its params are {} (no
     * payment method token or amount stays stored once settled).
     */
    settled?: true;
  };
}[Operation];

/** What a mutation answered. */
export interface PaymentResult {
  /** The payment as it is now. */
  payment: Payment;
  /** True when the key had been used before with the same parameters: nothing was done again. */
  replayed: boolean;
  /** The key the request carried. */
  idempotencyKey: string;
  /**
   * True when the operation has its final answer (and left storage). False
   * while the processor's answer is unknown (a PROCESSING payment or refund,
   * a pendingOperation): the key stays in storage, and waitForSettled() or
   * resumePending() finishes it.
   */
  settled: boolean;
}

/** What createPayment answered. */
export type CreatePaymentResult = PaymentResult;
/** What capturePayment answered. */
export type CapturePaymentResult = PaymentResult;
/** What cancelPayment answered. */
export type CancelPaymentResult = PaymentResult;
/** What refundPayment answered. */
export interface RefundPaymentResult extends PaymentResult {
  /** The refund: the one just made, or on a replay the one the key made first. */
  refund: Refund;
}

/** Options of one operation call. */
export interface CallOptions {
  /**
   * The key to send. Without one the client reuses the key of a stored
   * operation with the same parameters, or makes a new one.
   */
  idempotencyKey?: string;
  /** Stops retrying; the operation stays in storage. */
  signal?: AbortSignal;
}

/** Statuses whose payment is still waiting for the processor or the payer. */
export const unsettledStatuses: ReadonlySet<string> = new Set(['PROCESSING', 'PENDING']);

/**
 * isSettled says whether a payment has nothing left in flight: not
 * PROCESSING or PENDING, no capture or cancel waiting for the processor, no
 * refund PROCESSING.
 */
export function isSettled(p: Payment): boolean {
  return !unsettledStatuses.has(p.status) && !p.pendingOperation && !p.refunds.some((r) => r.status === 'PROCESSING');
}
