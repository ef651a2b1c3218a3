/* eslint-disable */
/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
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
};

/** What happened to a payment. */
export type PaymentEventType =
  /** An authorized payment was canceled. */
  | 'PAYMENT_CANCELED'
  /** An authorized payment was captured. */
  | 'PAYMENT_CAPTURED'
  /** The payment was created (captured, or only authorized). */
  | 'PAYMENT_CREATED'
  /** A captured payment was refunded, in part or in whole. */
  | 'PAYMENT_REFUNDED';

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
  /** Partly refunded: 0 < refundedAmount < capturedAmount. */
  | 'PARTIALLY_REFUNDED'
  /** Refunded in full: refundedAmount = capturedAmount. */
  | 'REFUNDED';

export type RefundFieldsFragment = { id: string, paymentId: string, amount: string, reason: string | null, idempotencyKey: string, createdAt: string };

export type PaymentFieldsFragment = { id: string, clientId: string, amount: string, currency: string, method: PaymentMethod, idempotencyKey: string, createdAt: string, replayCount: number, rejectedCount: number, status: PaymentStatus, capturedAmount: string, refundedAmount: string, capturedAt: string | null, canceledAt: string | null, refunds: Array<{ id: string, paymentId: string, amount: string, reason: string | null, idempotencyKey: string, createdAt: string }> };

export type CreatePaymentMutationVariables = Exact<{
  input: CreatePaymentInput;
  idempotencyKey: string;
}>;


export type CreatePaymentMutation = { createPayment: { replayed: boolean, payment: { id: string, clientId: string, amount: string, currency: string, method: PaymentMethod, idempotencyKey: string, createdAt: string, replayCount: number, rejectedCount: number, status: PaymentStatus, capturedAmount: string, refundedAmount: string, capturedAt: string | null, canceledAt: string | null, refunds: Array<{ id: string, paymentId: string, amount: string, reason: string | null, idempotencyKey: string, createdAt: string }> } } | null };

export type CapturePaymentMutationVariables = Exact<{
  paymentId: string | number;
  amount?: string | number | null | undefined;
  idempotencyKey: string;
}>;


export type CapturePaymentMutation = { capturePayment: { replayed: boolean, payment: { id: string, clientId: string, amount: string, currency: string, method: PaymentMethod, idempotencyKey: string, createdAt: string, replayCount: number, rejectedCount: number, status: PaymentStatus, capturedAmount: string, refundedAmount: string, capturedAt: string | null, canceledAt: string | null, refunds: Array<{ id: string, paymentId: string, amount: string, reason: string | null, idempotencyKey: string, createdAt: string }> } } | null };

export type CancelPaymentMutationVariables = Exact<{
  paymentId: string | number;
  idempotencyKey: string;
}>;


export type CancelPaymentMutation = { cancelPayment: { replayed: boolean, payment: { id: string, clientId: string, amount: string, currency: string, method: PaymentMethod, idempotencyKey: string, createdAt: string, replayCount: number, rejectedCount: number, status: PaymentStatus, capturedAmount: string, refundedAmount: string, capturedAt: string | null, canceledAt: string | null, refunds: Array<{ id: string, paymentId: string, amount: string, reason: string | null, idempotencyKey: string, createdAt: string }> } } | null };

export type RefundPaymentMutationVariables = Exact<{
  paymentId: string | number;
  amount?: string | number | null | undefined;
  reason?: string | null | undefined;
  idempotencyKey: string;
}>;


export type RefundPaymentMutation = { refundPayment: { replayed: boolean, refund: { id: string, paymentId: string, amount: string, reason: string | null, idempotencyKey: string, createdAt: string }, payment: { id: string, clientId: string, amount: string, currency: string, method: PaymentMethod, idempotencyKey: string, createdAt: string, replayCount: number, rejectedCount: number, status: PaymentStatus, capturedAmount: string, refundedAmount: string, capturedAt: string | null, canceledAt: string | null, refunds: Array<{ id: string, paymentId: string, amount: string, reason: string | null, idempotencyKey: string, createdAt: string }> } } | null };

export type PaymentQueryVariables = Exact<{
  id: string | number;
}>;


export type PaymentQuery = { payment: { id: string, clientId: string, amount: string, currency: string, method: PaymentMethod, idempotencyKey: string, createdAt: string, replayCount: number, rejectedCount: number, status: PaymentStatus, capturedAmount: string, refundedAmount: string, capturedAt: string | null, canceledAt: string | null, refunds: Array<{ id: string, paymentId: string, amount: string, reason: string | null, idempotencyKey: string, createdAt: string }> } | null };

export type PaymentEventsSubscriptionVariables = Exact<{
  paymentId?: string | number | null | undefined;
  after?: string | number | null | undefined;
}>;


export type PaymentEventsSubscription = { paymentEvents: { id: string, type: PaymentEventType, at: string, idempotencyKey: string, payment: { id: string, clientId: string, amount: string, currency: string, method: PaymentMethod, idempotencyKey: string, createdAt: string, replayCount: number, rejectedCount: number, status: PaymentStatus, capturedAmount: string, refundedAmount: string, capturedAt: string | null, canceledAt: string | null, refunds: Array<{ id: string, paymentId: string, amount: string, reason: string | null, idempotencyKey: string, createdAt: string }> }, refund: { id: string, paymentId: string, amount: string, reason: string | null, idempotencyKey: string, createdAt: string } | null } };

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
  status
  capturedAmount
  refundedAmount
  refunds {
    ...RefundFields
  }
  capturedAt
  canceledAt
}
    fragment RefundFields on Refund {
  id
  paymentId
  amount
  reason
  idempotencyKey
  createdAt
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
  status
  capturedAmount
  refundedAmount
  refunds {
    ...RefundFields
  }
  capturedAt
  canceledAt
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
  status
  capturedAmount
  refundedAmount
  refunds {
    ...RefundFields
  }
  capturedAt
  canceledAt
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
  status
  capturedAmount
  refundedAmount
  refunds {
    ...RefundFields
  }
  capturedAt
  canceledAt
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
  status
  capturedAmount
  refundedAmount
  refunds {
    ...RefundFields
  }
  capturedAt
  canceledAt
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
  status
  capturedAmount
  refundedAmount
  refunds {
    ...RefundFields
  }
  capturedAt
  canceledAt
}`) as unknown as TypedDocumentString<PaymentQuery, PaymentQueryVariables>;
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
  status
  capturedAmount
  refundedAmount
  refunds {
    ...RefundFields
  }
  capturedAt
  canceledAt
}`) as unknown as TypedDocumentString<PaymentEventsSubscription, PaymentEventsSubscriptionVariables>;