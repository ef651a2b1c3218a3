/* eslint-disable */
/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
/** What became of one request made with an idempotency key. */
export type AttemptOutcome =
  /** A capture, cancel or refund took effect. */
  | 'APPLIED'
  /** The request created the payment. */
  | 'CREATED'
  /**
   * A business rule refused the operation (PAYMENT_STATE_CONFLICT, AMOUNT_EXCEEDS_AVAILABLE); nothing was done and the key
   * stays unused. Or the processor refused a capture, cancel or refund, or failed a refund (PROCESSOR_REFUSED); nothing
   * was applied and the key stays bound to that refusal.
   */
  | 'REFUSED'
  /** Same key, another operation, payment or parameters: refused with IDEMPOTENCY_KEY_REUSED; nothing was done. */
  | 'REJECTED'
  /** Same key, same operation and parameters: the first result was returned and nothing was done again. */
  | 'REPLAYED';

/** The payment to create. These fields are the payload an idempotency key is bound to. */
export type CreatePaymentInput = {
  /** How much, greater than zero, with at most the currency's minor-unit digits (2 for BRL, 0 for JPY). */
  amount: string | number;
  /** false: authorize only; capture later with capturePayment, or cancel with cancelPayment. */
  capture?: boolean | null | undefined;
  /** Who pays: 1 to 100 characters. An idempotency key belongs to one client. */
  clientId: string | number;
  /** An active ISO 4217 currency code, in any letter case ("BRL", "brl"). */
  currency: string;
  /** How the payment is paid. */
  method: PaymentMethod;
  /**
   * The payment method at the processor: for cards, the token its client-side library made (Stripe: a PaymentMethod
   * id, pm_…). Part of the payload a key is bound to. 1 to 255 printable ASCII characters. The sandbox answers by it:
   * none, `pm_card_visa` or `pm_card_mastercard` approve; `pm_card_chargeDeclined` declines with `card_declined`;
   * `pm_card_chargeDeclinedInsufficientFunds` with `insufficient_funds`; `pm_sandbox_slow` approves after the
   * processor timeout (the first answer is PROCESSING); any other token declines with `invalid_payment_method`.
   */
  paymentMethodToken?: string | null | undefined;
};

/** The kind of thing a payer does to pay. */
export type NextActionType =
  /** Pay a boleto by its typeable line. */
  | 'BOLETO'
  /** Pay a Pix code (copy and paste it, or scan its QR code). */
  | 'PIX_CODE';

/** What a request asked to do. Every operation takes an idempotency key; a client's keys are one namespace shared by all of them. */
export type Operation =
  | 'CANCEL_PAYMENT'
  | 'CAPTURE_PAYMENT'
  | 'CREATE_PAYMENT'
  | 'REFUND_PAYMENT';

/** What happened to a payment. */
export type PaymentEventType =
  /** An authorized payment was canceled. */
  | 'PAYMENT_CANCELED'
  /** An authorized payment was captured. */
  | 'PAYMENT_CAPTURED'
  /** The payment was created (captured, or only authorized). */
  | 'PAYMENT_CREATED'
  /** The processor declined the payment's creation. */
  | 'PAYMENT_DECLINED'
  /** A Pix or boleto payment expired unpaid. */
  | 'PAYMENT_EXPIRED'
  /** A Pix or boleto payment was created and waits for the payer. */
  | 'PAYMENT_PENDING'
  /** A captured payment was refunded, in part or in whole (the refund SUCCEEDED). */
  | 'PAYMENT_REFUNDED'
  /** The processor failed a refund; its amount is available again. */
  | 'PAYMENT_REFUND_FAILED';

/** How a payment is paid. */
export type PaymentMethod =
  /** Boleto bancário, a Brazilian payment slip. */
  | 'BOLETO'
  /** Credit card. */
  | 'CREDIT_CARD'
  /** Debit card. */
  | 'DEBIT_CARD'
  /** Pix, Brazil's instant payment system. */
  | 'PIX';

/** Where a payment is in its life. */
export type PaymentStatus =
  /** Created with `capture: false`; waits for capturePayment or cancelPayment. */
  | 'AUTHORIZED'
  /** An authorization canceled before capture. */
  | 'CANCELED'
  /** Captured: at creation (the default) or by capturePayment. */
  | 'CAPTURED'
  /** The processor refused the payment (see `declineCode`); no money moved. Final: a new try needs a new key. */
  | 'DECLINED'
  /** The payer did not pay before `nextAction.expiresAt`; no money moved. Final. */
  | 'EXPIRED'
  /** Partly refunded: 0 < refundedAmount < capturedAmount. */
  | 'PARTIALLY_REFUNDED'
  /** Created at the processor; waiting for the payer (Pix, boleto): `nextAction` says what the payer does. */
  | 'PENDING'
  /** The processor was asked to create the payment and its answer is not known yet; CMPay resolves it by itself. */
  | 'PROCESSING'
  /** Refunded in full: refundedAmount = capturedAmount. */
  | 'REFUNDED';

/** Where a refund is at the processor. */
export type RefundStatus =
  /** The processor did not return the money; its amount is available to refund again. */
  | 'FAILED'
  /** Sent to the processor, whose answer is not known yet; its amount already counts against what is left to refund. */
  | 'PROCESSING'
  /** The processor returned the money. */
  | 'SUCCEEDED';

export type RefundFieldsFragment = { id: string, paymentId: string, amount: string, reason: string | null, idempotencyKey: string, createdAt: string, status: RefundStatus, failureCode: string | null };

export type PaymentFieldsFragment = { id: string, clientId: string, amount: string, currency: string, method: PaymentMethod, idempotencyKey: string, createdAt: string, replayCount: number, rejectedCount: number, attemptCount: number, status: PaymentStatus, capturedAmount: string, refundedAmount: string, refundCount: number, capturedAt: string | null, canceledAt: string | null, processor: string, processorReference: string | null, declineCode: string | null, pendingOperation: Operation | null, processorCallCount: number, paidAt: string | null, expiredAt: string | null, refunds: Array<{ id: string, paymentId: string, amount: string, reason: string | null, idempotencyKey: string, createdAt: string, status: RefundStatus, failureCode: string | null }>, nextAction: { type: NextActionType, pixCode: string | null, boletoLine: string | null, hostedUrl: string | null, expiresAt: string } | null };

export type CreatePaymentMutationVariables = Exact<{
  input: CreatePaymentInput;
  idempotencyKey: string;
}>;


export type CreatePaymentMutation = { createPayment: { replayed: boolean, payment: { id: string, clientId: string, amount: string, currency: string, method: PaymentMethod, idempotencyKey: string, createdAt: string, replayCount: number, rejectedCount: number, attemptCount: number, status: PaymentStatus, capturedAmount: string, refundedAmount: string, refundCount: number, capturedAt: string | null, canceledAt: string | null, processor: string, processorReference: string | null, declineCode: string | null, pendingOperation: Operation | null, processorCallCount: number, paidAt: string | null, expiredAt: string | null, refunds: Array<{ id: string, paymentId: string, amount: string, reason: string | null, idempotencyKey: string, createdAt: string, status: RefundStatus, failureCode: string | null }>, nextAction: { type: NextActionType, pixCode: string | null, boletoLine: string | null, hostedUrl: string | null, expiresAt: string } | null } } | null };

export type CapturePaymentMutationVariables = Exact<{
  paymentId: string | number;
  amount?: string | number | null | undefined;
  idempotencyKey: string;
}>;


export type CapturePaymentMutation = { capturePayment: { replayed: boolean, payment: { id: string, clientId: string, amount: string, currency: string, method: PaymentMethod, idempotencyKey: string, createdAt: string, replayCount: number, rejectedCount: number, attemptCount: number, status: PaymentStatus, capturedAmount: string, refundedAmount: string, refundCount: number, capturedAt: string | null, canceledAt: string | null, processor: string, processorReference: string | null, declineCode: string | null, pendingOperation: Operation | null, processorCallCount: number, paidAt: string | null, expiredAt: string | null, refunds: Array<{ id: string, paymentId: string, amount: string, reason: string | null, idempotencyKey: string, createdAt: string, status: RefundStatus, failureCode: string | null }>, nextAction: { type: NextActionType, pixCode: string | null, boletoLine: string | null, hostedUrl: string | null, expiresAt: string } | null } } | null };

export type CancelPaymentMutationVariables = Exact<{
  paymentId: string | number;
  idempotencyKey: string;
}>;


export type CancelPaymentMutation = { cancelPayment: { replayed: boolean, payment: { id: string, clientId: string, amount: string, currency: string, method: PaymentMethod, idempotencyKey: string, createdAt: string, replayCount: number, rejectedCount: number, attemptCount: number, status: PaymentStatus, capturedAmount: string, refundedAmount: string, refundCount: number, capturedAt: string | null, canceledAt: string | null, processor: string, processorReference: string | null, declineCode: string | null, pendingOperation: Operation | null, processorCallCount: number, paidAt: string | null, expiredAt: string | null, refunds: Array<{ id: string, paymentId: string, amount: string, reason: string | null, idempotencyKey: string, createdAt: string, status: RefundStatus, failureCode: string | null }>, nextAction: { type: NextActionType, pixCode: string | null, boletoLine: string | null, hostedUrl: string | null, expiresAt: string } | null } } | null };

export type RefundPaymentMutationVariables = Exact<{
  paymentId: string | number;
  amount?: string | number | null | undefined;
  reason?: string | null | undefined;
  idempotencyKey: string;
}>;


export type RefundPaymentMutation = { refundPayment: { replayed: boolean, refund: { id: string, paymentId: string, amount: string, reason: string | null, idempotencyKey: string, createdAt: string, status: RefundStatus, failureCode: string | null }, payment: { id: string, clientId: string, amount: string, currency: string, method: PaymentMethod, idempotencyKey: string, createdAt: string, replayCount: number, rejectedCount: number, attemptCount: number, status: PaymentStatus, capturedAmount: string, refundedAmount: string, refundCount: number, capturedAt: string | null, canceledAt: string | null, processor: string, processorReference: string | null, declineCode: string | null, pendingOperation: Operation | null, processorCallCount: number, paidAt: string | null, expiredAt: string | null, refunds: Array<{ id: string, paymentId: string, amount: string, reason: string | null, idempotencyKey: string, createdAt: string, status: RefundStatus, failureCode: string | null }>, nextAction: { type: NextActionType, pixCode: string | null, boletoLine: string | null, hostedUrl: string | null, expiresAt: string } | null } } | null };

export type PaymentQueryVariables = Exact<{
  id: string | number;
}>;


export type PaymentQuery = { payment: { id: string, clientId: string, amount: string, currency: string, method: PaymentMethod, idempotencyKey: string, createdAt: string, replayCount: number, rejectedCount: number, attemptCount: number, status: PaymentStatus, capturedAmount: string, refundedAmount: string, refundCount: number, capturedAt: string | null, canceledAt: string | null, processor: string, processorReference: string | null, declineCode: string | null, pendingOperation: Operation | null, processorCallCount: number, paidAt: string | null, expiredAt: string | null, refunds: Array<{ id: string, paymentId: string, amount: string, reason: string | null, idempotencyKey: string, createdAt: string, status: RefundStatus, failureCode: string | null }>, nextAction: { type: NextActionType, pixCode: string | null, boletoLine: string | null, hostedUrl: string | null, expiresAt: string } | null } | null };

export type PaymentsByKeyQueryVariables = Exact<{
  clientId: string | number;
  idempotencyKey: string;
}>;


export type PaymentsByKeyQuery = { payments: { edges: Array<{ node: { id: string, clientId: string, amount: string, currency: string, method: PaymentMethod, idempotencyKey: string, createdAt: string, replayCount: number, rejectedCount: number, attemptCount: number, status: PaymentStatus, capturedAmount: string, refundedAmount: string, refundCount: number, capturedAt: string | null, canceledAt: string | null, processor: string, processorReference: string | null, declineCode: string | null, pendingOperation: Operation | null, processorCallCount: number, paidAt: string | null, expiredAt: string | null, refunds: Array<{ id: string, paymentId: string, amount: string, reason: string | null, idempotencyKey: string, createdAt: string, status: RefundStatus, failureCode: string | null }>, nextAction: { type: NextActionType, pixCode: string | null, boletoLine: string | null, hostedUrl: string | null, expiresAt: string } | null } }>, pageInfo: { hasNextPage: boolean } } };

export type PaymentAttemptsQueryVariables = Exact<{
  id: string | number;
}>;


export type PaymentAttemptsQuery = { payment: { id: string, clientId: string, amount: string, currency: string, method: PaymentMethod, idempotencyKey: string, createdAt: string, replayCount: number, rejectedCount: number, attemptCount: number, status: PaymentStatus, capturedAmount: string, refundedAmount: string, refundCount: number, capturedAt: string | null, canceledAt: string | null, processor: string, processorReference: string | null, declineCode: string | null, pendingOperation: Operation | null, processorCallCount: number, paidAt: string | null, expiredAt: string | null, attempts: Array<{ operation: Operation, idempotencyKey: string, outcome: AttemptOutcome }>, refunds: Array<{ id: string, paymentId: string, amount: string, reason: string | null, idempotencyKey: string, createdAt: string, status: RefundStatus, failureCode: string | null }>, nextAction: { type: NextActionType, pixCode: string | null, boletoLine: string | null, hostedUrl: string | null, expiresAt: string } | null } | null };

export type PaymentEventsSubscriptionVariables = Exact<{
  paymentId?: string | number | null | undefined;
  after?: string | number | null | undefined;
}>;


export type PaymentEventsSubscription = { paymentEvents: { id: string, type: PaymentEventType, at: string, idempotencyKey: string, payment: { id: string, clientId: string, amount: string, currency: string, method: PaymentMethod, idempotencyKey: string, createdAt: string, replayCount: number, rejectedCount: number, attemptCount: number, status: PaymentStatus, capturedAmount: string, refundedAmount: string, refundCount: number, capturedAt: string | null, canceledAt: string | null, processor: string, processorReference: string | null, declineCode: string | null, pendingOperation: Operation | null, processorCallCount: number, paidAt: string | null, expiredAt: string | null, refunds: Array<{ id: string, paymentId: string, amount: string, reason: string | null, idempotencyKey: string, createdAt: string, status: RefundStatus, failureCode: string | null }>, nextAction: { type: NextActionType, pixCode: string | null, boletoLine: string | null, hostedUrl: string | null, expiresAt: string } | null }, refund: { id: string, paymentId: string, amount: string, reason: string | null, idempotencyKey: string, createdAt: string, status: RefundStatus, failureCode: string | null } | null } };

export class TypedDocumentString<TResult, TVariables>
  extends String
  implements DocumentTypeDecoration<TResult, TVariables>
{
  __apiType?: NonNullable<DocumentTypeDecoration<TResult, TVariables>['__apiType']>;
  private value: string;
  public __meta__?: Record<string, any> | undefined;

  constructor(value: string, __meta__?: Record<string, any> | undefined) {
    super(value);
    this.value = value;
    this.__meta__ = __meta__;
  }

  override toString(): string & DocumentTypeDecoration<TResult, TVariables> {
    return this.value;
  }
}
export const RefundFieldsFragmentDoc = new TypedDocumentString(`
    fragment RefundFields on Refund {
  id
  paymentId
  amount
  reason
  idempotencyKey
  createdAt
  status
  failureCode
}
    `, {"fragmentName":"RefundFields"}) as unknown as TypedDocumentString<RefundFieldsFragment, unknown>;
export const PaymentFieldsFragmentDoc = new TypedDocumentString(`
    fragment PaymentFields on Payment {
  id
  clientId
  amount
  currency
  method
  idempotencyKey
  createdAt
  replayCount
  rejectedCount
  attemptCount
  status
  capturedAmount
  refundedAmount
  refunds {
    ...RefundFields
  }
  refundCount
  capturedAt
  canceledAt
  processor
  processorReference
  declineCode
  pendingOperation
  processorCallCount
  nextAction {
    type
    pixCode
    boletoLine
    hostedUrl
    expiresAt
  }
  paidAt
  expiredAt
}
    fragment RefundFields on Refund {
  id
  paymentId
  amount
  reason
  idempotencyKey
  createdAt
  status
  failureCode
}`, {"fragmentName":"PaymentFields"}) as unknown as TypedDocumentString<PaymentFieldsFragment, unknown>;
export const CreatePaymentDocument = new TypedDocumentString(`
    mutation CreatePayment($input: CreatePaymentInput!, $idempotencyKey: String!) {
  createPayment(input: $input, idempotencyKey: $idempotencyKey) {
    payment {
      ...PaymentFields
    }
    replayed
  }
}
    fragment RefundFields on Refund {
  id
  paymentId
  amount
  reason
  idempotencyKey
  createdAt
  status
  failureCode
}
fragment PaymentFields on Payment {
  id
  clientId
  amount
  currency
  method
  idempotencyKey
  createdAt
  replayCount
  rejectedCount
  attemptCount
  status
  capturedAmount
  refundedAmount
  refunds {
    ...RefundFields
  }
  refundCount
  capturedAt
  canceledAt
  processor
  processorReference
  declineCode
  pendingOperation
  processorCallCount
  nextAction {
    type
    pixCode
    boletoLine
    hostedUrl
    expiresAt
  }
  paidAt
  expiredAt
}`) as unknown as TypedDocumentString<CreatePaymentMutation, CreatePaymentMutationVariables>;
export const CapturePaymentDocument = new TypedDocumentString(`
    mutation CapturePayment($paymentId: ID!, $amount: Decimal, $idempotencyKey: String!) {
  capturePayment(
    paymentId: $paymentId
    amount: $amount
    idempotencyKey: $idempotencyKey
  ) {
    payment {
      ...PaymentFields
    }
    replayed
  }
}
    fragment RefundFields on Refund {
  id
  paymentId
  amount
  reason
  idempotencyKey
  createdAt
  status
  failureCode
}
fragment PaymentFields on Payment {
  id
  clientId
  amount
  currency
  method
  idempotencyKey
  createdAt
  replayCount
  rejectedCount
  attemptCount
  status
  capturedAmount
  refundedAmount
  refunds {
    ...RefundFields
  }
  refundCount
  capturedAt
  canceledAt
  processor
  processorReference
  declineCode
  pendingOperation
  processorCallCount
  nextAction {
    type
    pixCode
    boletoLine
    hostedUrl
    expiresAt
  }
  paidAt
  expiredAt
}`) as unknown as TypedDocumentString<CapturePaymentMutation, CapturePaymentMutationVariables>;
export const CancelPaymentDocument = new TypedDocumentString(`
    mutation CancelPayment($paymentId: ID!, $idempotencyKey: String!) {
  cancelPayment(paymentId: $paymentId, idempotencyKey: $idempotencyKey) {
    payment {
      ...PaymentFields
    }
    replayed
  }
}
    fragment RefundFields on Refund {
  id
  paymentId
  amount
  reason
  idempotencyKey
  createdAt
  status
  failureCode
}
fragment PaymentFields on Payment {
  id
  clientId
  amount
  currency
  method
  idempotencyKey
  createdAt
  replayCount
  rejectedCount
  attemptCount
  status
  capturedAmount
  refundedAmount
  refunds {
    ...RefundFields
  }
  refundCount
  capturedAt
  canceledAt
  processor
  processorReference
  declineCode
  pendingOperation
  processorCallCount
  nextAction {
    type
    pixCode
    boletoLine
    hostedUrl
    expiresAt
  }
  paidAt
  expiredAt
}`) as unknown as TypedDocumentString<CancelPaymentMutation, CancelPaymentMutationVariables>;
export const RefundPaymentDocument = new TypedDocumentString(`
    mutation RefundPayment($paymentId: ID!, $amount: Decimal, $reason: String, $idempotencyKey: String!) {
  refundPayment(
    paymentId: $paymentId
    amount: $amount
    reason: $reason
    idempotencyKey: $idempotencyKey
  ) {
    refund {
      ...RefundFields
    }
    payment {
      ...PaymentFields
    }
    replayed
  }
}
    fragment RefundFields on Refund {
  id
  paymentId
  amount
  reason
  idempotencyKey
  createdAt
  status
  failureCode
}
fragment PaymentFields on Payment {
  id
  clientId
  amount
  currency
  method
  idempotencyKey
  createdAt
  replayCount
  rejectedCount
  attemptCount
  status
  capturedAmount
  refundedAmount
  refunds {
    ...RefundFields
  }
  refundCount
  capturedAt
  canceledAt
  processor
  processorReference
  declineCode
  pendingOperation
  processorCallCount
  nextAction {
    type
    pixCode
    boletoLine
    hostedUrl
    expiresAt
  }
  paidAt
  expiredAt
}`) as unknown as TypedDocumentString<RefundPaymentMutation, RefundPaymentMutationVariables>;
export const PaymentDocument = new TypedDocumentString(`
    query Payment($id: ID!) {
  payment(id: $id) {
    ...PaymentFields
  }
}
    fragment RefundFields on Refund {
  id
  paymentId
  amount
  reason
  idempotencyKey
  createdAt
  status
  failureCode
}
fragment PaymentFields on Payment {
  id
  clientId
  amount
  currency
  method
  idempotencyKey
  createdAt
  replayCount
  rejectedCount
  attemptCount
  status
  capturedAmount
  refundedAmount
  refunds {
    ...RefundFields
  }
  refundCount
  capturedAt
  canceledAt
  processor
  processorReference
  declineCode
  pendingOperation
  processorCallCount
  nextAction {
    type
    pixCode
    boletoLine
    hostedUrl
    expiresAt
  }
  paidAt
  expiredAt
}`) as unknown as TypedDocumentString<PaymentQuery, PaymentQueryVariables>;
export const PaymentsByKeyDocument = new TypedDocumentString(`
    query PaymentsByKey($clientId: ID!, $idempotencyKey: String!) {
  payments(
    filter: {clientId: $clientId, idempotencyKey: $idempotencyKey}
    first: 20
  ) {
    edges {
      node {
        ...PaymentFields
      }
    }
    pageInfo {
      hasNextPage
    }
  }
}
    fragment RefundFields on Refund {
  id
  paymentId
  amount
  reason
  idempotencyKey
  createdAt
  status
  failureCode
}
fragment PaymentFields on Payment {
  id
  clientId
  amount
  currency
  method
  idempotencyKey
  createdAt
  replayCount
  rejectedCount
  attemptCount
  status
  capturedAmount
  refundedAmount
  refunds {
    ...RefundFields
  }
  refundCount
  capturedAt
  canceledAt
  processor
  processorReference
  declineCode
  pendingOperation
  processorCallCount
  nextAction {
    type
    pixCode
    boletoLine
    hostedUrl
    expiresAt
  }
  paidAt
  expiredAt
}`) as unknown as TypedDocumentString<PaymentsByKeyQuery, PaymentsByKeyQueryVariables>;
export const PaymentAttemptsDocument = new TypedDocumentString(`
    query PaymentAttempts($id: ID!) {
  payment(id: $id) {
    ...PaymentFields
    attempts(last: 100) {
      operation
      idempotencyKey
      outcome
    }
  }
}
    fragment RefundFields on Refund {
  id
  paymentId
  amount
  reason
  idempotencyKey
  createdAt
  status
  failureCode
}
fragment PaymentFields on Payment {
  id
  clientId
  amount
  currency
  method
  idempotencyKey
  createdAt
  replayCount
  rejectedCount
  attemptCount
  status
  capturedAmount
  refundedAmount
  refunds {
    ...RefundFields
  }
  refundCount
  capturedAt
  canceledAt
  processor
  processorReference
  declineCode
  pendingOperation
  processorCallCount
  nextAction {
    type
    pixCode
    boletoLine
    hostedUrl
    expiresAt
  }
  paidAt
  expiredAt
}`) as unknown as TypedDocumentString<PaymentAttemptsQuery, PaymentAttemptsQueryVariables>;
export const PaymentEventsDocument = new TypedDocumentString(`
    subscription PaymentEvents($paymentId: ID, $after: ID) {
  paymentEvents(paymentId: $paymentId, after: $after) {
    id
    type
    at
    idempotencyKey
    payment {
      ...PaymentFields
    }
    refund {
      ...RefundFields
    }
  }
}
    fragment RefundFields on Refund {
  id
  paymentId
  amount
  reason
  idempotencyKey
  createdAt
  status
  failureCode
}
fragment PaymentFields on Payment {
  id
  clientId
  amount
  currency
  method
  idempotencyKey
  createdAt
  replayCount
  rejectedCount
  attemptCount
  status
  capturedAmount
  refundedAmount
  refunds {
    ...RefundFields
  }
  refundCount
  capturedAt
  canceledAt
  processor
  processorReference
  declineCode
  pendingOperation
  processorCallCount
  nextAction {
    type
    pixCode
    boletoLine
    hostedUrl
    expiresAt
  }
  paidAt
  expiredAt
}`) as unknown as TypedDocumentString<PaymentEventsSubscription, PaymentEventsSubscriptionVariables>;