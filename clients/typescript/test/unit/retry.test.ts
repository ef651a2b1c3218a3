import { describe, expect, test } from 'vitest';
import {
  CMPayClient,
  UnavailableError,
  backoffDelay,
  memoryStorage,
  parseRetryAfter,
  retryPolicy,
} from '../../src/index.js';
import { fakeClock, gqlError, ok, payment, scriptedTransport, type Step } from './fakes.js';

const input = { clientId: 'c1', amount: '10.50', currency: 'BRL', method: 'PIX' as const };

function client(steps: Step[], retry = {}) {
  const transport = scriptedTransport(steps);
  const clock = fakeClock();
  const storage = memoryStorage();
  let n = 0;
  const c = new CMPayClient({
    url: 'http://x/graphql',
    token: 't',
    storage,
    transport,
    clock,
    random: () => 0.5,
    newKey: () => `key-${++n}`,
    retry,
  });
  return { c, transport, clock, storage };
}

describe('backoff', () => {
  const p = retryPolicy({ baseDelayMs: 100, maxDelayMs: 1000 });
  test('full jitter: the wait is random below a ceiling that doubles per try', () => {
    expect(backoffDelay(1, p, () => 0.999)).toBe(99);
    expect(backoffDelay(3, p, () => 0.999)).toBe(399);
    expect(backoffDelay(1, p, () => 0)).toBe(0);
    expect(backoffDelay(3, p, () => 0.5)).toBe(200);
  });
  test('the ceiling is capped at maxDelayMs', () => {
    expect(backoffDelay(10, p, () => 0.999)).toBe(999);
    expect(backoffDelay(60, p, () => 0.999)).toBe(999);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-12-04T10:00:00Z');
  test('seconds', () => expect(parseRetryAfter('3', now)).toBe(3000));
  test('an HTTP date', () => expect(parseRetryAfter('Fri, 04 Dec 2026 10:00:05 GMT', now)).toBe(5000));
  test('a past date is now', () => expect(parseRetryAfter('Fri, 04 Dec 2026 09:00:00 GMT', now)).toBe(0));
  test('absent or unreadable', () => {
    expect(parseRetryAfter(null, now)).toBeNull();
    expect(parseRetryAfter('soon', now)).toBeNull();
  });
});

describe('retries', () => {
  const created = ok({ createPayment: { payment: payment({ idempotencyKey: 'key-1' }), replayed: false } });

  test('network errors, timeouts and 5xx are retried with the same key until an answer comes', async () => {
    const { c, transport, clock, storage } = client([
      new TypeError('fetch failed'),
      { status: 502, retryAfter: null, body: undefined },
      { status: 500, retryAfter: null, body: { errors: [{ message: 'internal error', extensions: { code: 'INTERNAL_SERVER_ERROR' } }] } },
      created,
    ]);
    const r = await c.createPayment(input);
    expect(r.settled).toBe(true);
    expect(transport.requests.map((q) => q.variables.idempotencyKey)).toEqual(['key-1', 'key-1', 'key-1', 'key-1']);
    // random() is 0.5: half of 250, 500, 1000 ms.
    expect(clock.sleeps).toEqual([125, 250, 500]);
    expect(storage.load()).toEqual([]);
  });

  test('SERVICE_UNAVAILABLE in a GraphQL answer is retried, honouring Retry-After over a shorter backoff', async () => {
    const { c, clock } = client([gqlError('createPayment', 'SERVICE_UNAVAILABLE', {}, 503, '3'), created]);
    await c.createPayment(input);
    expect(clock.sleeps).toEqual([3000]);
  });

  test('a 409 "in progress" is retried; a 409 that is a final GraphQL error is not', async () => {
    const { c, transport } = client([{ status: 409, retryAfter: '1', body: { title: 'request in progress' } }, created]);
    await c.createPayment(input);
    expect(transport.requests).toHaveLength(2);

    const second = client([gqlError('createPayment', 'IDEMPOTENCY_KEY_REUSED', { differingFields: ['amount'] }, 409)]);
    await expect(second.c.createPayment(input)).rejects.toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED' });
    expect(second.transport.requests).toHaveLength(1);
  });

  test('a try that takes longer than attemptTimeoutMs is abandoned and retried', async () => {
    const hang: Step = (_req, signal) =>
      new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
    const { c, transport } = client([hang, created], { attemptTimeoutMs: 20 });
    const r = await c.createPayment(input);
    expect(r.payment.idempotencyKey).toBe('key-1');
    expect(transport.requests).toHaveLength(2);
  });

  test('when the tries run out the error says so and the operation stays stored', async () => {
    const { c, transport, storage } = client(
      [new TypeError('a'), new TypeError('b'), new TypeError('c')],
      { maxAttempts: 3 },
    );
    const err = await c.createPayment(input).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnavailableError);
    expect(err).toMatchObject({ attempts: 3, pending: true, retryable: true, code: 'NETWORK_ERROR', idempotencyKey: 'key-1' });
    expect(transport.requests).toHaveLength(3);
    expect(storage.load().map((o) => o.idempotencyKey)).toEqual(['key-1']);
  });

  test('a Retry-After beyond maxRetryAfterMs ends the retries at once', async () => {
    const { c, transport, clock } = client([gqlError('createPayment', 'SERVICE_UNAVAILABLE', {}, 503, '3600')], {
      maxRetryAfterMs: 60_000,
    });
    await expect(c.createPayment(input)).rejects.toBeInstanceOf(UnavailableError);
    expect(transport.requests).toHaveLength(1);
    expect(clock.sleeps).toEqual([]);
  });

  test('final answers are not retried and leave storage', async () => {
    for (const code of ['IDEMPOTENCY_KEY_REUSED', 'BAD_USER_INPUT', 'PAYMENT_STATE_CONFLICT', 'NOT_FOUND', 'UNAUTHENTICATED']) {
      const { c, transport, storage } = client([gqlError('createPayment', code)]);
      await expect(c.createPayment(input)).rejects.toMatchObject({ code, pending: false });
      expect(transport.requests).toHaveLength(1);
      expect(storage.load()).toEqual([]);
    }
  });

  test('a caller abort stops the retries and keeps the operation stored', async () => {
    const ctl = new AbortController();
    const { c, storage } = client([
      () => {
        ctl.abort(new Error('user left'));
        throw new TypeError('fetch failed');
      },
    ]);
    await expect(c.createPayment(input, { signal: ctl.signal })).rejects.toMatchObject({ code: 'ABORTED', pending: true });
    expect(storage.load()).toHaveLength(1);
  });
});
