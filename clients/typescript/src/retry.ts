// The retry policy: which answers are worth sending again with the same key,
// and how long to wait first. Written here rather than taken from a backoff
// package (exponential-backoff, p-retry) because the policy has to read
// GraphQL answers (a SERVICE_UNAVAILABLE error inside a 200), honour the
// server's Retry-After over its own schedule, and take an injected clock and
// random source so that the unit tests check exact delays; a package would
// still need all of that around it.
import { CMPayError, fromGraphQLError, retryableCodes, type GraphQLErrorBody } from './errors.js';
import type { TransportResponse } from './transport.js';

/** How the client retries. Every field is optional. */
export interface RetryOptions {
  /** Requests sent at most for one call, the first included; default 8. */
  maxAttempts?: number;
  /** The backoff's first step; default 250 ms. The wait before try n+1 is random in [0, min(maxDelayMs, baseDelayMs * 2^(n-1))) ("full jitter"). */
  baseDelayMs?: number;
  /** The backoff's cap; default 10 s. */
  maxDelayMs?: number;
  /** How long one request may take before it is abandoned and retried; default 15 s. */
  attemptTimeoutMs?: number;
  /** A Retry-After longer than this ends the call's retries (the operation stays pending); default 60 s. */
  maxRetryAfterMs?: number;
}

/** The policy with every default filled in. */
export type RetryPolicy = Required<RetryOptions>;

/** retryPolicy fills in RetryOptions' defaults. */
export function retryPolicy(o: RetryOptions = {}): RetryPolicy {
  return {
    maxAttempts: o.maxAttempts ?? 8,
    baseDelayMs: o.baseDelayMs ?? 250,
    maxDelayMs: o.maxDelayMs ?? 10_000,
    attemptTimeoutMs: o.attemptTimeoutMs ?? 15_000,
    maxRetryAfterMs: o.maxRetryAfterMs ?? 60_000,
  };
}

/** backoffDelay is the wait before try attempt+1 (attempt counts from 1): capped exponential with full jitter. */
export function backoffDelay(attempt: number, p: RetryPolicy, random: () => number): number {
  const ceiling = Math.min(p.maxDelayMs, p.baseDelayMs * 2 ** (attempt - 1));
  return Math.floor(random() * ceiling);
}

/** parseRetryAfter reads a Retry-After header (seconds, or an HTTP date) as milliseconds from now; null when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, now: number): number | null {
  if (value === null || value === undefined || value.trim() === '') return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** What one answer means for the call. */
export type Verdict =
  | { kind: 'data'; data: unknown }
  | { kind: 'retry'; error: CMPayError; retryAfterMs: number | null }
  | { kind: 'final'; error: CMPayError; settles: boolean; refusal: boolean };

// The codes that settle the operation the request asked for: the server
// judged this key or these parameters, so sending them again would get the
// same answer. Any other final answer (UNAUTHENTICATED, FORBIDDEN, a proxy's
// 4xx, a code this client does not know) says nothing about the operation,
// which may have been applied by an earlier try whose answer was lost.
const settlingCodes: ReadonlySet<string> = new Set([
  'BAD_USER_INPUT',
  'IDEMPOTENCY_KEY_REUSED',
  'PAYMENT_STATE_CONFLICT',
  'AMOUNT_EXCEEDS_AVAILABLE',
  'PAYMENT_DECLINED',
  'PROCESSOR_REFUSED',
  'NOT_FOUND',
]);

// The codes with which CMPay refuses a request before running it (a token
// it does not accept, a body it cannot read, a query it does not know), and
// a GraphQL server's own for the last two: the request applied nothing.
// Such a refusal does not judge the operation either (an earlier try may
// have applied it), but it proves this try did nothing.
const refusalCodes: ReadonlySet<string> = new Set([
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'BAD_REQUEST',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
]);

// HTTP statuses that say "not now" rather than "no": 408 timeout, 409 a
// request with this key still executing, 425 too early, 429 too many, 5xx.
const retryableStatus = (s: number) => s === 408 || s === 409 || s === 425 || s === 429 || s >= 500;

/**
 * judge reads one answer to a request for the root field `field`. A payload
 * in data wins over everything (a committed payment is never hidden behind an
 * error); then an error with a retryable code, any 429 or 503, or a
 * retryable status (408, 409, 425, 5xx) with a code CMPay does not send, is
 * retried; any other error is final. A final error settles the operation
 * only when the server judged the operation itself (settlingCodes), and is
 * a refusal when the request was turned away before it ran (refusalCodes, a
 * 4xx that is not GraphQL's). With nullable, a null field without errors is
 * an answer too (a query for a payment that does not exist).
 */
export function judge(res: TransportResponse, field: string, now: number, nullable = false): Verdict {
  const body = res.body as { data?: Record<string, unknown> | null; errors?: GraphQLErrorBody[] } | undefined;
  const payload = body?.data?.[field];
  if (payload !== undefined && payload !== null) return { kind: 'data', data: payload };
  const noErrors = !Array.isArray(body?.errors) || body.errors.length === 0;
  if (nullable && payload === null && noErrors && res.status < 300) return { kind: 'data', data: null };

  let retryAfterMs = parseRetryAfter(res.retryAfter, now);
  const errors = Array.isArray(body?.errors) ? body.errors : [];
  // The error about this field, else the first (an error about the request as a whole has no path).
  const gqlErr = errors.find((e) => e.path?.[0] === field) ?? errors[0];
  if (gqlErr) {
    const err = fromGraphQLError(gqlErr, res.status);
    const ext = gqlErr.extensions ?? {};
    if (typeof ext.retryAfter === 'number') retryAfterMs ??= ext.retryAfter * 1000;
    if (retryableCodes.has(err.code) || res.status === 503 || res.status === 429) return { kind: 'retry', error: err, retryAfterMs };
    // A code CMPay does not send (a gateway's GATEWAY_TIMEOUT, a router's
    // REQUEST_TIMEOUT) with a "not now" status is retried as if it had none.
    const settles = settlingCodes.has(err.code);
    const refusal = refusalCodes.has(err.code);
    if (!settles && !refusal && retryableStatus(res.status)) return { kind: 'retry', error: err, retryAfterMs };
    return { kind: 'final', error: err, settles, refusal };
  }
  const code = body === undefined ? 'BAD_RESPONSE' : 'NO_DATA';
  const err = new CMPayError(`the server answered HTTP ${res.status} without ${field}`, {
    code,
    httpStatus: res.status,
    retryable: true,
  });
  // A 200 that is not GraphQL's (a proxy's page) may pass; a 4xx will not.
  if (retryableStatus(res.status) || res.status < 300) return { kind: 'retry', error: err, retryAfterMs };
  return { kind: 'final', error: new CMPayError(err.message, { code, httpStatus: res.status }), settles: false, refusal: true };
}
