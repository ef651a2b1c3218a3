// CMPay's TypeScript client. See README.md: create a CMPayClient with a
// storage, call resumePending() at start, then pay.
export { CMPayClient } from './client.js';
export type { CMPayClientOptions, ResumedOperation, WaitOptions } from './client.js';
export { memoryStorage, fileStorage, indexedDBStorage, defaultStorage } from './storage.js';
export type { PendingStorage, SyncPendingStorage, IndexedDBStorageOptions } from './storage.js';
export {
  CMPayError,
  KeyReusedError,
  StateConflictError,
  AmountExceedsAvailableError,
  DeclinedError,
  ProcessorRefusedError,
  RefundFailedError,
  BadUserInputError,
  NotFoundError,
  AuthError,
  UnavailableError,
  AbortedError,
  ExpiredOperationError,
  StorageError,
  WaitTimeoutError,
  fromGraphQLError,
} from './errors.js';
export type { CMPayErrorOptions, GraphQLErrorBody } from './errors.js';
export { retryPolicy, backoffDelay, parseRetryAfter } from './retry.js';
export type { RetryOptions, RetryPolicy } from './retry.js';
export { fetchTransport } from './transport.js';
export type { Transport, TransportResponse, GraphQLRequest } from './transport.js';
export { defaultSubscriber } from './events.js';
export type { Subscriber, SubscriptionResult, SubscriberOptions, DefaultSubscriber } from './events.js';
export { canonicalAmount, differingFields } from './params.js';
export { newIdempotencyKey, parseDuration } from './clock.js';
export type { Clock } from './clock.js';
export { isSettled } from './types.js';
export type * from './types.js';
