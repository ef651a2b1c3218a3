/* eslint-disable */
import * as types from './graphql.js';



/**
 * Map of all GraphQL operations in the project.
 *
 * This map has several performance disadvantages:
 * 1. It is not tree-shakeable, so it will include all operations in the project.
 * 2. It is not minifiable, so the string of a GraphQL query will be multiple times inside the bundle.
 * 3. It does not support dead code elimination, so it will add unused operations.
 *
 * Therefore it is highly recommended to use the babel or swc plugin for production.
 * Learn more about it here: https://the-guild.dev/graphql/codegen/plugins/presets/preset-client#reducing-bundle-size
 */
type Documents = {
    "fragment RefundFields on Refund {\n  id\n  paymentId\n  amount\n  reason\n  idempotencyKey\n  createdAt\n  status\n  failureCode\n}\n\nfragment PaymentFields on Payment {\n  id\n  clientId\n  amount\n  currency\n  method\n  idempotencyKey\n  createdAt\n  replayCount\n  rejectedCount\n  attemptCount\n  status\n  capturedAmount\n  refundedAmount\n  refunds {\n    ...RefundFields\n  }\n  refundCount\n  capturedAt\n  canceledAt\n  processor\n  processorReference\n  declineCode\n  pendingOperation\n  processorCallCount\n  nextAction {\n    type\n    pixCode\n    boletoLine\n    hostedUrl\n    expiresAt\n  }\n  paidAt\n  expiredAt\n}": typeof types.RefundFieldsFragmentDoc,
    "mutation CreatePayment($input: CreatePaymentInput!, $idempotencyKey: String!) {\n  createPayment(input: $input, idempotencyKey: $idempotencyKey) {\n    payment {\n      ...PaymentFields\n    }\n    replayed\n  }\n}\n\nmutation CapturePayment($paymentId: ID!, $amount: Decimal, $idempotencyKey: String!) {\n  capturePayment(\n    paymentId: $paymentId\n    amount: $amount\n    idempotencyKey: $idempotencyKey\n  ) {\n    payment {\n      ...PaymentFields\n    }\n    replayed\n  }\n}\n\nmutation CancelPayment($paymentId: ID!, $idempotencyKey: String!) {\n  cancelPayment(paymentId: $paymentId, idempotencyKey: $idempotencyKey) {\n    payment {\n      ...PaymentFields\n    }\n    replayed\n  }\n}\n\nmutation RefundPayment($paymentId: ID!, $amount: Decimal, $reason: String, $idempotencyKey: String!) {\n  refundPayment(\n    paymentId: $paymentId\n    amount: $amount\n    reason: $reason\n    idempotencyKey: $idempotencyKey\n  ) {\n    refund {\n      ...RefundFields\n    }\n    payment {\n      ...PaymentFields\n    }\n    replayed\n  }\n}\n\nquery Payment($id: ID!) {\n  payment(id: $id) {\n    ...PaymentFields\n  }\n}\n\nsubscription PaymentEvents($paymentId: ID, $after: ID) {\n  paymentEvents(paymentId: $paymentId, after: $after) {\n    id\n    type\n    at\n    idempotencyKey\n    payment {\n      ...PaymentFields\n    }\n    refund {\n      ...RefundFields\n    }\n  }\n}": typeof types.CreatePaymentDocument,
};
const documents: Documents = {
    "fragment RefundFields on Refund {\n  id\n  paymentId\n  amount\n  reason\n  idempotencyKey\n  createdAt\n  status\n  failureCode\n}\n\nfragment PaymentFields on Payment {\n  id\n  clientId\n  amount\n  currency\n  method\n  idempotencyKey\n  createdAt\n  replayCount\n  rejectedCount\n  attemptCount\n  status\n  capturedAmount\n  refundedAmount\n  refunds {\n    ...RefundFields\n  }\n  refundCount\n  capturedAt\n  canceledAt\n  processor\n  processorReference\n  declineCode\n  pendingOperation\n  processorCallCount\n  nextAction {\n    type\n    pixCode\n    boletoLine\n    hostedUrl\n    expiresAt\n  }\n  paidAt\n  expiredAt\n}": types.RefundFieldsFragmentDoc,
    "mutation CreatePayment($input: CreatePaymentInput!, $idempotencyKey: String!) {\n  createPayment(input: $input, idempotencyKey: $idempotencyKey) {\n    payment {\n      ...PaymentFields\n    }\n    replayed\n  }\n}\n\nmutation CapturePayment($paymentId: ID!, $amount: Decimal, $idempotencyKey: String!) {\n  capturePayment(\n    paymentId: $paymentId\n    amount: $amount\n    idempotencyKey: $idempotencyKey\n  ) {\n    payment {\n      ...PaymentFields\n    }\n    replayed\n  }\n}\n\nmutation CancelPayment($paymentId: ID!, $idempotencyKey: String!) {\n  cancelPayment(paymentId: $paymentId, idempotencyKey: $idempotencyKey) {\n    payment {\n      ...PaymentFields\n    }\n    replayed\n  }\n}\n\nmutation RefundPayment($paymentId: ID!, $amount: Decimal, $reason: String, $idempotencyKey: String!) {\n  refundPayment(\n    paymentId: $paymentId\n    amount: $amount\n    reason: $reason\n    idempotencyKey: $idempotencyKey\n  ) {\n    refund {\n      ...RefundFields\n    }\n    payment {\n      ...PaymentFields\n    }\n    replayed\n  }\n}\n\nquery Payment($id: ID!) {\n  payment(id: $id) {\n    ...PaymentFields\n  }\n}\n\nsubscription PaymentEvents($paymentId: ID, $after: ID) {\n  paymentEvents(paymentId: $paymentId, after: $after) {\n    id\n    type\n    at\n    idempotencyKey\n    payment {\n      ...PaymentFields\n    }\n    refund {\n      ...RefundFields\n    }\n  }\n}": types.CreatePaymentDocument,
};

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "fragment RefundFields on Refund {\n  id\n  paymentId\n  amount\n  reason\n  idempotencyKey\n  createdAt\n  status\n  failureCode\n}\n\nfragment PaymentFields on Payment {\n  id\n  clientId\n  amount\n  currency\n  method\n  idempotencyKey\n  createdAt\n  replayCount\n  rejectedCount\n  attemptCount\n  status\n  capturedAmount\n  refundedAmount\n  refunds {\n    ...RefundFields\n  }\n  refundCount\n  capturedAt\n  canceledAt\n  processor\n  processorReference\n  declineCode\n  pendingOperation\n  processorCallCount\n  nextAction {\n    type\n    pixCode\n    boletoLine\n    hostedUrl\n    expiresAt\n  }\n  paidAt\n  expiredAt\n}"): typeof import('./graphql.js').RefundFieldsFragmentDoc;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "mutation CreatePayment($input: CreatePaymentInput!, $idempotencyKey: String!) {\n  createPayment(input: $input, idempotencyKey: $idempotencyKey) {\n    payment {\n      ...PaymentFields\n    }\n    replayed\n  }\n}\n\nmutation CapturePayment($paymentId: ID!, $amount: Decimal, $idempotencyKey: String!) {\n  capturePayment(\n    paymentId: $paymentId\n    amount: $amount\n    idempotencyKey: $idempotencyKey\n  ) {\n    payment {\n      ...PaymentFields\n    }\n    replayed\n  }\n}\n\nmutation CancelPayment($paymentId: ID!, $idempotencyKey: String!) {\n  cancelPayment(paymentId: $paymentId, idempotencyKey: $idempotencyKey) {\n    payment {\n      ...PaymentFields\n    }\n    replayed\n  }\n}\n\nmutation RefundPayment($paymentId: ID!, $amount: Decimal, $reason: String, $idempotencyKey: String!) {\n  refundPayment(\n    paymentId: $paymentId\n    amount: $amount\n    reason: $reason\n    idempotencyKey: $idempotencyKey\n  ) {\n    refund {\n      ...RefundFields\n    }\n    payment {\n      ...PaymentFields\n    }\n    replayed\n  }\n}\n\nquery Payment($id: ID!) {\n  payment(id: $id) {\n    ...PaymentFields\n  }\n}\n\nsubscription PaymentEvents($paymentId: ID, $after: ID) {\n  paymentEvents(paymentId: $paymentId, after: $after) {\n    id\n    type\n    at\n    idempotencyKey\n    payment {\n      ...PaymentFields\n    }\n    refund {\n      ...RefundFields\n    }\n  }\n}"): typeof import('./graphql.js').CreatePaymentDocument;


export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}
