// Fakes for the unit tests: a transport that answers from a script, a clock
// that records its sleeps without waiting, and a subscriber fed by the test.
import type { Clock, GraphQLRequest, PendingOperation, SubscriptionResult, Transport, TransportResponse } from '../../src/index.js';

/** One scripted answer: a response, an error to throw (no answer), or a function of the request. */
export type Step = TransportResponse | Error | ((req: GraphQLRequest, signal: AbortSignal) => Promise<TransportResponse> | TransportResponse);

/** A transport answering each request with the next step; it fails the test when the script runs out. */
export function scriptedTransport(steps: Step[]): Transport & { requests: GraphQLRequest[] } {
  const requests: GraphQLRequest[] = [];
  const t = (async (req: GraphQLRequest, signal: AbortSignal) => {
    requests.push(structuredClone(req));
    const step = steps.shift();
    if (step === undefined) throw new Error(`unexpected request ${req.operationName} (script exhausted)`);
    if (step instanceof Error) throw step;
    if (typeof step === 'function') return step(req, signal);
    return step;
  }) as Transport & { requests: GraphQLRequest[] };
  t.requests = requests;
  return t;
}

/** A 200 answer with data. */
export const ok = (data: Record<string, unknown>): TransportResponse => ({ status: 200, retryAfter: null, body: { data } });

/** An answer with one GraphQL error about field. */
export const gqlError = (
  field: string,
  code: string,
  extensions: Record<string, unknown> = {},
  status = 200,
  retryAfter: string | null = null,
): TransportResponse => ({
  status,
  retryAfter,
  body: { data: { [field]: null }, errors: [{ message: `${code} happened`, path: [field], extensions: { code, ...extensions } }] },
});

let seq = 0;
/** A payment as the server answers it. */
export function payment(over: Record<string, unknown> = {}) {
  seq++;
  return {
    id: `pay_${seq}`,
    clientId: 'c1',
    amount: '10.50',
    currency: 'BRL',
    method: 'PIX',
    idempotencyKey: 'k',
    createdAt: '2026-12-04T10:00:00Z',
    replayCount: 0,
    rejectedCount: 0,
    status: 'CAPTURED',
    capturedAmount: '10.50',
    refundedAmount: '0.00',
    refunds: [],
    capturedAt: '2026-12-04T10:00:00Z',
    canceledAt: null,
    ...over,
  };
}

/** A clock whose sleeps return at once and are recorded; now() advances by them. */
export function fakeClock(): Clock & { sleeps: number[] } {
  let now = Date.parse('2026-12-04T10:00:00Z');
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => now,
    sleep: async (ms, signal) => {
      if (signal?.aborted) throw signal.reason;
      sleeps.push(ms);
      now += ms;
    },
  };
}

/** A clock whose sleeps never end unless aborted: for tests where time must not pass. */
export const frozenClock: Clock = {
  now: () => Date.parse('2026-12-04T10:00:00Z'),
  sleep: (_ms, signal) => new Promise((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason), { once: true })),
};

/** A subscriber the test feeds: push() delivers an event to every open subscription. */
export function fakeSubscriber() {
  const open = new Set<(r: SubscriptionResult | null) => void>();
  const subscriptions: GraphQLRequest[] = [];
  const subscriber = (req: GraphQLRequest): AsyncIterableIterator<SubscriptionResult> => {
    subscriptions.push(req);
    const queue: Array<SubscriptionResult | null> = [];
    let wake: (() => void) | undefined;
    const deliver = (r: SubscriptionResult | null) => {
      queue.push(r);
      wake?.();
    };
    open.add(deliver);
    const it: AsyncIterableIterator<SubscriptionResult> = {
      next: async () => {
        while (queue.length === 0) await new Promise<void>((r) => (wake = r));
        const r = queue.shift()!;
        if (r === null) {
          open.delete(deliver);
          return { done: true, value: undefined };
        }
        return { done: false, value: r };
      },
      return: async () => {
        deliver(null);
        return { done: true, value: undefined };
      },
      [Symbol.asyncIterator]: () => it,
    };
    return it;
  };
  return {
    subscriber,
    subscriptions,
    push: (p: unknown) => {
      for (const d of open) d({ data: { paymentEvents: { id: '1', type: 'PAYMENT_CAPTURED', payment: p } } });
    },
    openCount: () => open.size,
  };
}

/** How one scripted subscription ends: it throws this value, or yields this result (errors, say) and completes. */
export type SubscriptionStep = { throws: unknown } | { yields: SubscriptionResult };

/**
 * A subscriber that ends each subscription as the next step says; once the
 * script has run out, a subscription stays open, quiet, until closed.
 */
export function scriptedSubscriber(steps: SubscriptionStep[]) {
  const subscriptions: GraphQLRequest[] = [];
  const subscriber = (req: GraphQLRequest): AsyncIterableIterator<SubscriptionResult> => {
    subscriptions.push(req);
    const step = steps.shift();
    let yielded = false;
    let closed: (() => void) | undefined;
    const ended = new Promise<void>((r) => (closed = r));
    const it: AsyncIterableIterator<SubscriptionResult> = {
      next: async () => {
        if (step && 'throws' in step) throw step.throws;
        if (step && !yielded) {
          yielded = true;
          return { done: false, value: step.yields };
        }
        if (!step) await ended;
        return { done: true, value: undefined };
      },
      return: async () => {
        closed?.();
        return { done: true, value: undefined };
      },
      [Symbol.asyncIterator]: () => it,
    };
    return it;
  };
  return { subscriber, subscriptions };
}

/** Keys of the operations in a list, for short assertions. */
export const keys = (ops: PendingOperation[]) => ops.map((o) => o.idempotencyKey);
