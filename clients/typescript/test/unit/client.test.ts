import { describe, expect, test, vi } from 'vitest';
import {
  AbortedError,
  AuthError,
  CMPayClient,
  CMPayError,
  ExpiredOperationError,
  KeyReusedError,
  ProcessorRefusedError,
  StorageError,
  canonicalAmount,
  indexedDBStorage,
  UnavailableError,
  WaitTimeoutError,
  memoryStorage,
  parseDuration,
  type Clock,
  type PendingStorage,
  type Transport,
} from '../../src/index.js';
import {
  fakeClock,
  fakeSubscriber,
  frozenClock,
  gqlError,
  keys,
  ok,
  payment,
  scriptedSubscriber,
  scriptedTransport,
  type Step,
  type SubscriptionStep,
} from './fakes.js';

const input = { clientId: 'c1', amount: '10.50', currency: 'BRL', method: 'PIX' as const };

let keyCount = 0;
function client(storage: PendingStorage, transport: Transport, extra: Partial<ConstructorParameters<typeof CMPayClient>[0]> = {}) {
  return new CMPayClient({
    url: 'http://x/graphql',
    token: 't',
    storage,
    transport,
    clock: fakeClock(),
    newKey: () => `key-${++keyCount}`,
    retry: { maxAttempts: 2 },
    ...extra,
  });
}

const created = (key: string, over = {}) => ok({ createPayment: { payment: payment({ idempotencyKey: key, ...over }), replayed: false } });
const down: Step[] = [new TypeError('offline'), new TypeError('offline')];

describe('resuming after a restart', () => {
  test('an operation left without an answer is resumed by the next client with its own key', async () => {
    const storage = memoryStorage();
    const first = client(storage, scriptedTransport([...down]));
    const err = await first.createPayment(input).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnavailableError);
    const [stored] = first.pending();
    expect(stored).toMatchObject({ operation: 'CREATE_PAYMENT', params: input });

    // The page reloads: a new client, the same storage.
    const transport = scriptedTransport([created(stored.idempotencyKey)]);
    const second = client(storage, transport);
    expect(second.pending()).toEqual([stored]);
    const [outcome] = await second.resumePending();
    expect(outcome).toMatchObject({ settled: true, result: { idempotencyKey: stored.idempotencyKey, settled: true } });
    expect(transport.requests.map((q) => q.operationName)).toEqual(['CreatePayment']);
    expect(transport.requests[0].variables).toMatchObject({ idempotencyKey: stored.idempotencyKey, input });
    expect(second.pending()).toEqual([]);
    expect(storage.load()).toEqual([]);
  });

  test("a checkout reloaded mid-request and paid again under its order's key gets that payment back, after resumePending too", async () => {
    // The README's checkout: one shopper's storage, the key the server made
    // for the order ('order-7' here) as the key.
    const storage = { ...memoryStorage(), singleUser: true };
    const first = client(storage, scriptedTransport([...down]));
    await expect(first.createPayment(input, { idempotencyKey: 'order-7' })).rejects.toBeInstanceOf(UnavailableError);

    // The reloaded page resumes first, which settles the payment and removes
    // its key; then it shows the form again and the shopper pays.
    const replay = (req: { variables: Record<string, unknown> }) =>
      ok({ createPayment: { payment: payment({ id: 'p-order-7', idempotencyKey: String(req.variables.idempotencyKey) }), replayed: req.variables.idempotencyKey === 'order-7' } });
    const transport = scriptedTransport([replay, replay, replay]);
    const page = client(storage, transport);
    const [resumed] = await page.resumePending();
    expect(resumed).toMatchObject({ settled: true, result: { payment: { id: 'p-order-7' } } });
    expect(storage.load()).toEqual([]);

    const again = await page.createPayment(input, { idempotencyKey: 'order-7' });
    expect(transport.requests[1].variables.idempotencyKey).toBe('order-7');
    expect(again).toMatchObject({ replayed: true, payment: { id: 'p-order-7' } });
    // A call without the order's id after the call with it: the resumed
    // payment was already asked for again under its key, so this one is a
    // new payment, with a key of its own.
    const unkeyed = await page.createPayment(input);
    expect(transport.requests[2].variables.idempotencyKey).not.toBe('order-7');
    expect(unkeyed.replayed).toBe(false);
  });

  test('a checkout without a key reloaded mid-request and paid again after resumePending gets the resumed payment back, once', async () => {
    // One shopper's storage and no key: the reloaded page resumes first,
    // which settles the payment and removes it from storage, then shows the
    // form again; the shopper clicks Pay with the same cart.
    const storage = { ...memoryStorage(), singleUser: true };
    await expect(client(storage, scriptedTransport([...down])).createPayment(input)).rejects.toBeInstanceOf(UnavailableError);
    const [stored] = storage.load();
    const transport = scriptedTransport([created(stored.idempotencyKey, { id: 'p-first' }), created('k-second', { id: 'p-second' })]);
    const page = client(storage, transport, { newKey: () => 'k-second' });
    const [resumed] = await page.resumePending();
    expect(resumed).toMatchObject({ settled: true, result: { payment: { id: 'p-first' } } });
    expect(storage.load()).toEqual([]);

    const again = await page.createPayment({ ...input, amount: '10.5' });
    expect(again).toMatchObject({ replayed: true, settled: true, idempotencyKey: stored.idempotencyKey, payment: { id: 'p-first' } });
    expect(transport.requests).toHaveLength(1);
    expect(storage.load()).toEqual([]);
    // Answered once: the next equal click is a purchase of its own.
    const next = await page.createPayment(input);
    expect(next).toMatchObject({ replayed: false, payment: { id: 'p-second' } });
    expect(transport.requests.map((q) => q.variables.idempotencyKey)).toEqual([stored.idempotencyKey, 'k-second']);
  });

  test('a call that joined the request resumePending was sending is the one answered with it: the next equal call is new', async () => {
    // The reloaded page shows its form while resumePending() still waits for
    // the server, and the shopper pays: that click joins the resumed request
    // and gets its payment. A later equal payment is a purchase of its own,
    // whichever of the two the answer reached first.
    for (const callFirst of [false, true]) {
      const storage = { ...memoryStorage(), singleUser: true };
      await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'k1', params: input, startedAt: '2026-12-04T10:00:00.000Z' });
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const transport = scriptedTransport([
        async () => {
          await gate;
          return created('k1', { id: 'p-first' });
        },
        created('k-second', { id: 'p-second' }),
      ]);
      const page = client(storage, transport, { newKey: () => 'k-second' });
      const early = callFirst ? undefined : page.resumePending();
      const clicked = page.createPayment(input);
      const resumed = early ?? page.resumePending();
      release();
      const [[outcome], first] = await Promise.all([resumed, clicked]);
      expect(outcome.result?.payment.id).toBe('p-first');
      expect(first).toMatchObject({ payment: { id: 'p-first' } });
      const next = await page.createPayment(input);
      expect(next, `call first: ${callFirst}`).toMatchObject({ replayed: false, payment: { id: 'p-second' } });
    }
  });

  test('a payment resumePending found by its stale key answers an equal call without a key, within 15 minutes of that', async () => {
    // Paid offline two days ago, the tab closed: the next visit looks the key
    // up, finds the payment, and the form shown again takes no second one.
    const storage = { ...memoryStorage(), singleUser: true };
    await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'k-old', params: input, startedAt: '2026-12-02T10:00:00.000Z' });
    const found = payment({ id: 'p-old', idempotencyKey: 'k-old', createdAt: '2026-12-02T10:00:01Z' });
    const byKey = ok({ payments: { edges: [{ node: found }], pageInfo: { hasNextPage: false } } });
    const transport = scriptedTransport([byKey, byKey, created('k-new', { id: 'p-new' })]);
    const clock = fakeClock();
    const visit = client(storage, transport, { clock, newKey: () => 'k-new' });
    const [resumed] = await visit.resumePending();
    expect(resumed).toMatchObject({ settled: true, result: { replayed: true, payment: { id: 'p-old' } } });
    expect(await visit.createPayment(input)).toMatchObject({ replayed: true, payment: { id: 'p-old' } });
    expect(transport.requests.map((q) => q.operationName)).toEqual(['PaymentsByKey']);

    // A page left open 15 minutes after that: its next equal payment is new.
    await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'k-old', params: input, startedAt: '2026-12-02T10:00:00.000Z' });
    await visit.resumePending();
    await clock.sleep(parseDuration('15m'));
    expect(await visit.createPayment(input)).toMatchObject({ replayed: false, payment: { id: 'p-new' } });
  });

  test('an operation resumePending settled is not joined by other parameters, nor by a server that pays for many', async () => {
    const run = async (storage: PendingStorage, call: (c: CMPayClient) => Promise<unknown>) => {
      await client(storage, scriptedTransport([...down])).createPayment(input).catch(() => undefined);
      const [stored] = await storage.load();
      const transport = scriptedTransport([created(stored.idempotencyKey, { id: 'p-first' }), created('k-other', { id: 'p-other' })]);
      const page = client(storage, transport, { newKey: () => 'k-other' });
      await page.resumePending();
      await call(page);
      return transport.requests.map((q) => q.variables.idempotencyKey);
    };
    const shopper = { ...memoryStorage(), singleUser: true };
    const k1 = await run(shopper, (c) => c.createPayment({ ...input, amount: '11.00' }));
    expect(k1[1]).toBe('k-other');
    const k2 = await run({ ...memoryStorage(), singleUser: true }, (c) => c.createPayment(input, { idempotencyKey: 'k-other' }));
    expect(k2[1]).toBe('k-other');
    // memoryStorage alone is not one user's: joining by parameters is off.
    const k3 = await run(memoryStorage(), (c) => c.createPayment(input));
    expect(k3[1]).toBe('k-other');
  });

  test('a Pix resumePending found still waiting for its payer is not answered again: its code may expire', async () => {
    const storage = { ...memoryStorage(), singleUser: true };
    await expect(client(storage, scriptedTransport([...down])).createPayment(input)).rejects.toBeInstanceOf(UnavailableError);
    const [stored] = storage.load();
    const pix = { status: 'PENDING', capturedAmount: '0.00', capturedAt: null, nextAction: { type: 'PIX_QR_CODE', pixCode: 'x', expiresAt: '2026-12-04T10:30:00Z' } };
    const transport = scriptedTransport([created(stored.idempotencyKey, { id: 'p-first', ...pix }), created('k-second', { id: 'p-second', ...pix })]);
    const page = client(storage, transport, { newKey: () => 'k-second' });
    await page.resumePending();
    expect(await page.createPayment(input)).toMatchObject({ replayed: false, payment: { id: 'p-second' } });
  });

  test('a payment resumePending found ended unpaid (a Pix expired, an authorization canceled) is not answered again', async () => {
    // The shopper comes back after the Pix code expired (or the card's hold
    // lapsed): paying again is a new try, as after a decline, not the
    // first payment asked for twice.
    for (const ended of [
      { status: 'EXPIRED', capturedAmount: '0.00', capturedAt: null, expiredAt: '2026-12-04T10:30:00Z' },
      { status: 'CANCELED', capturedAmount: '0.00', capturedAt: null, canceledAt: '2026-12-04T10:30:00Z' },
    ]) {
      const storage = { ...memoryStorage(), singleUser: true };
      await expect(client(storage, scriptedTransport([...down])).createPayment(input)).rejects.toBeInstanceOf(UnavailableError);
      const [stored] = storage.load();
      const transport = scriptedTransport([created(stored.idempotencyKey, { id: 'p-first', ...ended }), created('k-second', { id: 'p-second' })]);
      const page = client(storage, transport, { newKey: () => 'k-second' });
      const [resumed] = await page.resumePending();
      expect(resumed).toMatchObject({ settled: true, result: { payment: { id: 'p-first', status: ended.status } } });
      expect(await page.createPayment(input), ended.status).toMatchObject({ replayed: false, payment: { id: 'p-second' } });
    }
  });

  test('a refund without a key entered again after resumePending settled it refunds once', async () => {
    const storage = { ...memoryStorage(), singleUser: true };
    const params = { paymentId: 'p1', amount: '2.00', reason: 'damaged' };
    await expect(client(storage, scriptedTransport([...down])).refundPayment(params)).rejects.toBeInstanceOf(UnavailableError);
    const [stored] = storage.load();
    const refund = { id: 'r1', amount: '2.00', reason: 'damaged', idempotencyKey: stored.idempotencyKey, createdAt: '2026-12-04T10:00:00Z', status: 'SUCCEEDED' };
    const transport = scriptedTransport([ok({ refundPayment: { refund, payment: payment({ id: 'p1', status: 'PARTIALLY_REFUNDED' }), replayed: false } })]);
    const page = client(storage, transport);
    await page.resumePending();
    const again = await page.refundPayment(params);
    expect(again).toMatchObject({ replayed: true, refund: { id: 'r1' } });
    expect(transport.requests).toHaveLength(1);
  });

  test('a resumed operation whose key the server holds is not judged here: the replay is the answer', async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'k-made', params: input, startedAt: '2026-12-04T09:59:00.000Z' });
    const transport = scriptedTransport([ok({ createPayment: { payment: payment({ id: 'p-made', idempotencyKey: 'k-made' }), replayed: true } })]);
    const [outcome] = await client(storage, transport).resumePending();
    expect(outcome).toMatchObject({ settled: true, result: { replayed: true, payment: { id: 'p-made' } } });
    expect(transport.requests.map((q) => q.operationName)).toEqual(['CreatePayment']);
    expect(storage.load()).toEqual([]);
  });

  test("a resumed capture the processor refused is the server's PROCESSOR_REFUSED, and settles", async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'CAPTURE_PAYMENT', idempotencyKey: 'cap-q', params: { paymentId: 'p1' }, startedAt: '2026-12-04T09:59:00.000Z' });
    const transport = scriptedTransport([gqlError('capturePayment', 'PROCESSOR_REFUSED', { processorCode: 'charge_already_refunded' }, 402)]);
    const [outcome] = await client(storage, transport).resumePending();
    expect(outcome.result).toBeUndefined();
    expect(outcome).toMatchObject({ settled: true, error: { code: 'PROCESSOR_REFUSED', processorCode: 'charge_already_refunded' } });
    expect(storage.load()).toEqual([]);
  });

  test('the same payment entered again after a reload reuses the stored key, whatever the amount is written as', async () => {
    const storage = memoryStorage();
    await client(storage, scriptedTransport([...down])).createPayment(input).catch(() => undefined);
    const [stored] = storage.load();

    const transport = scriptedTransport([created(stored.idempotencyKey, { replayed: true })]);
    const again = client(storage, transport, { joinByParameters: true });
    const r = await again.createPayment({ ...input, amount: 10.5, currency: 'brl' });
    expect(r.idempotencyKey).toBe(stored.idempotencyKey);
    expect(transport.requests.map((q) => q.variables.idempotencyKey)).toEqual([stored.idempotencyKey]);
  });

  test('other parameters get a new key', async () => {
    const storage = memoryStorage();
    await client(storage, scriptedTransport([...down])).createPayment(input).catch(() => undefined);
    const [stored] = storage.load();
    const transport = scriptedTransport([(req) => created(String(req.variables.idempotencyKey))]);
    const r = await client(storage, transport).createPayment({ ...input, amount: '10.51' });
    expect(r.idempotencyKey).not.toBe(stored.idempotencyKey);
    expect(keys(storage.load())).toEqual([stored.idempotencyKey]);
  });

  test("a caller's key stored with the same client id in another Unicode form is that operation", async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'order-8', params: { ...input, clientId: 'cafe\u0301' }, startedAt: '2026-12-04T09:59:00.000Z' });
    const transport = scriptedTransport([created('order-8', { clientId: 'caf\u00e9' })]);
    const r = await client(storage, transport).createPayment({ ...input, clientId: 'caf\u00e9', amount: '+1050e-2' }, { idempotencyKey: 'order-8' });
    expect(r.idempotencyKey).toBe('order-8');
  });

  test('amounts are compared by value, as the server reads them', () => {
    for (const [a, b] of [['10.50', '10.5'], ['+10.50', '10.5'], ['1.05e1', '10.5'], ['1050E-2', '10.5'], ['0.105e+2', '10.5'], ['1e3', '1000'], ['.5', '0.5'], ['5.', '5'], ['0.00', '0'], ['1e-3', '0.001']] as const) {
      expect(canonicalAmount(a), a).toBe(b);
    }
    expect(canonicalAmount(10.5)).toBe('10.5');
    expect(canonicalAmount('1e999999')).toBe('1e999999');
    expect(canonicalAmount('1e999999')).toBe(canonicalAmount('10e999998'));
    expect(canonicalAmount('-10.5')).toBe('-10.5');
    expect(canonicalAmount('ten')).toBe('ten');
    expect(canonicalAmount(null)).toBeNull();
  });

  test("a caller's key stored for other parameters is refused before anything is sent", async () => {
    const storage = memoryStorage();
    await client(storage, scriptedTransport([...down])).createPayment(input, { idempotencyKey: 'order-7' }).catch(() => undefined);
    const transport = scriptedTransport([]);
    const err = await client(storage, transport).createPayment({ ...input, amount: '20' }, { idempotencyKey: 'order-7' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KeyReusedError);
    expect(err).toMatchObject({ local: true, differingFields: ['amount'] });
    // Like the server's refusal, it says what to do.
    expect((err as KeyReusedError).message).toContain('use a new key for a new request');
    expect(transport.requests).toEqual([]);
  });

  test('resumePending sends the oldest first and reports each outcome, final errors included', async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'REFUND_PAYMENT', idempotencyKey: 'r', params: { paymentId: 'p1', amount: '1' }, startedAt: '2026-12-04T10:00:02.000Z' });
    await storage.put({ operation: 'CAPTURE_PAYMENT', idempotencyKey: 'c', params: { paymentId: 'p1' }, startedAt: '2026-12-04T10:00:01.000Z' });
    const transport = scriptedTransport([
      ok({ capturePayment: { payment: payment({ id: 'p1' }), replayed: true } }),
      gqlError('refundPayment', 'AMOUNT_EXCEEDS_AVAILABLE', { available: '0.00' }),
    ]);
    const out = await client(storage, transport).resumePending();
    expect(transport.requests.map((q) => q.operationName)).toEqual(['CapturePayment', 'RefundPayment']);
    expect(out.map((o) => [o.pending.idempotencyKey, o.settled, o.error?.code ?? 'ok'])).toEqual([
      ['c', true, 'ok'],
      ['r', true, 'AMOUNT_EXCEEDS_AVAILABLE'],
    ]);
    expect(storage.load()).toEqual([]);
  });

  test('a resume and a call for the same operation share one request', async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'k1', params: input, startedAt: '2026-12-04T10:00:00.000Z' });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const transport = scriptedTransport([
      async () => {
        await gate;
        return created('k1');
      },
    ]);
    const c = client(storage, transport, { joinByParameters: true });
    const resumed = c.resumePending();
    const entered = c.createPayment(input);
    release();
    const [[outcome], r] = await Promise.all([resumed, entered]);
    expect(outcome.result?.payment.id).toBe(r.payment.id);
    expect(transport.requests.map((q) => q.operationName)).toEqual(['CreatePayment']);
  });
});

describe('answers still in flight at the processor (contract v3)', () => {
  test('a PROCESSING payment stays stored; waitForSettled follows its events and then forgets it', async () => {
    const storage = memoryStorage();
    const subs = fakeSubscriber();
    const processing = payment({ id: 'p5', idempotencyKey: 'key-x', status: 'PROCESSING', capturedAmount: '0.00' });
    const captured = { ...processing, status: 'CAPTURED', capturedAmount: '10.50' };
    let reads = 0;
    const transport = scriptedTransport([
      ok({ createPayment: { payment: processing, replayed: false } }),
      () => (reads++, ok({ payment: processing })),
      () => (reads++, ok({ payment: captured })),
    ]);
    const c = client(storage, transport, { subscriber: subs.subscriber, clock: frozenClock, newKey: () => 'key-x' });
    const r = await c.createPayment(input);
    expect(r.settled).toBe(false);
    expect(keys(c.pending())).toEqual(['key-x']);

    const waiting = c.waitForSettled('p5', { timeoutMs: 5_000 });
    await expect.poll(() => reads).toBe(1);
    await expect.poll(() => subs.openCount()).toBe(1);
    subs.push(captured);
    const settled = await waiting;
    expect(settled.status).toBe('CAPTURED');
    expect(c.pending()).toEqual([]);
    expect(subs.subscriptions[0].variables).toEqual({ paymentId: 'p5' });
    expect(subs.openCount()).toBe(0);
  });

  test('a PROCESSING payment the processor then declines: waitForSettled answers it DECLINED, without throwing, and forgets the key', async () => {
    // The README's ten lines read this answer: a DeclinedError comes only
    // from a create answered DECLINED at once.
    const subs = fakeSubscriber();
    const processing = payment({ id: 'p5d', idempotencyKey: 'key-d', status: 'PROCESSING', capturedAmount: '0.00' });
    const declined = { ...processing, status: 'DECLINED', declineCode: 'card_declined' };
    const transport = scriptedTransport([ok({ createPayment: { payment: processing, replayed: false } }), ok({ payment: processing }), ok({ payment: declined })]);
    const c = client(memoryStorage(), transport, { subscriber: subs.subscriber, clock: frozenClock, newKey: () => 'key-d' });
    expect((await c.createPayment(input)).settled).toBe(false);
    const waiting = c.waitForSettled('p5d', { timeoutMs: 5_000 });
    await expect.poll(() => subs.openCount()).toBe(1);
    await expect.poll(() => transport.requests.length).toBe(2);
    subs.push({});
    expect(await waiting).toMatchObject({ status: 'DECLINED', declineCode: 'card_declined' });
    expect(c.pending()).toEqual([]);
  });

  test('a PENDING Pix payment: the create is settled, and waitForSettled waits until the payer pays', async () => {
    const subs = fakeSubscriber();
    const pending = payment({ id: 'p6', status: 'PENDING', nextAction: { type: 'PIX_CODE', pixCode: '0002', expiresAt: 'x' } });
    const transport = scriptedTransport([
      ok({ createPayment: { payment: pending, replayed: false } }),
      ok({ payment: pending }),
      ok({ payment: { ...pending, status: 'CAPTURED', nextAction: null } }),
    ]);
    const c = client(memoryStorage(), transport, { subscriber: subs.subscriber, clock: frozenClock });
    const r = await c.createPayment(input);
    expect(r).toMatchObject({ settled: true, payment: { status: 'PENDING' } });
    expect(c.pending()).toEqual([]);
    const waiting = c.waitForSettled('p6');
    await expect.poll(() => subs.openCount()).toBe(1);
    await expect.poll(() => transport.requests.length).toBe(2);
    subs.push({});
    expect((await waiting).status).toBe('CAPTURED');
  });

  test('a refund PROCESSING and a capture with a pendingOperation stay stored', async () => {
    const storage = memoryStorage();
    const refund = { id: 'r1', paymentId: 'p7', amount: '1.00', reason: null, idempotencyKey: 'key-r', createdAt: 'x', status: 'PROCESSING', failureCode: null };
    const transport = scriptedTransport([
      ok({ refundPayment: { refund, payment: payment({ id: 'p7', refunds: [refund] }), replayed: false } }),
      ok({ capturePayment: { payment: payment({ id: 'p8', status: 'AUTHORIZED', pendingOperation: 'CAPTURE_PAYMENT' }), replayed: false } }),
    ]);
    const c = client(storage, transport);
    expect((await c.refundPayment({ paymentId: 'p7', amount: '1' }, { idempotencyKey: 'key-r' })).settled).toBe(false);
    expect((await c.capturePayment({ paymentId: 'p8' }, { idempotencyKey: 'key-c' })).settled).toBe(false);
    expect(keys(c.pending()).sort()).toEqual(['key-c', 'key-r']);
  });

  test('waitForSettled gives up after timeoutMs with the payment as last seen', async () => {
    const subs = fakeSubscriber();
    const processing = payment({ id: 'p9', status: 'PROCESSING' });
    const c = client(memoryStorage(), scriptedTransport([ok({ payment: processing })]), { subscriber: subs.subscriber, clock: frozenClock });
    const err = await c.waitForSettled('p9', { timeoutMs: 50 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WaitTimeoutError);
    expect((err as WaitTimeoutError).payment?.status).toBe('PROCESSING');
    expect(subs.openCount()).toBe(0);
  });

  test('a payment already settled resolves at once', async () => {
    const subs = fakeSubscriber();
    const c = client(memoryStorage(), scriptedTransport([ok({ payment: payment({ id: 'p10' }) })]), { subscriber: subs.subscriber, clock: frozenClock });
    expect((await c.waitForSettled('p10')).status).toBe('CAPTURED');
  });
});

describe('a double click', () => {
  // A storage of one user's operations that takes a while to write, as IndexedDB does.
  const slowStorage = (singleUser: boolean): PendingStorage => {
    const storage = memoryStorage();
    return {
      ...storage,
      singleUser,
      put: async (op) => {
        await new Promise((r) => setTimeout(r, 20));
        storage.put(op);
      },
    };
  };

  test("two calls with the same parameters at once make one request with one key; the second sees it replayed", async () => {
    const transport = scriptedTransport([(req) => created(String(req.variables.idempotencyKey))]);
    const c = client(slowStorage(true), transport);
    const [a, b] = await Promise.all([c.createPayment(input), c.createPayment({ ...input, amount: '10.5' })]);
    expect(transport.requests).toHaveLength(1);
    expect(a.payment.id).toBe(b.payment.id);
    expect(a.idempotencyKey).toBe(b.idempotencyKey);
    expect([a.replayed, b.replayed]).toEqual([false, true]);
  });

  test("a server's storage (not one user's) makes two customers' equal payments two payments", async () => {
    const transport = scriptedTransport([(req) => created(String(req.variables.idempotencyKey)), (req) => created(String(req.variables.idempotencyKey))]);
    const c = client(slowStorage(false), transport);
    const [a, b] = await Promise.all([c.createPayment(input), c.createPayment(input)]);
    expect(transport.requests).toHaveLength(2);
    expect(a.idempotencyKey).not.toBe(b.idempotencyKey);
    expect([a.replayed, b.replayed]).toEqual([false, false]);
  });

  test('a payment another tab settled is not joined: the same parameters later are a new payment', async () => {
    // Two tabs share one IndexedDB: here one memoryStorage, joinByParameters on.
    const storage = memoryStorage();
    await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'k-first', params: input, startedAt: '2026-12-04T09:59:00.000Z' });
    const made = payment({ id: 'p-first', idempotencyKey: 'k-first' });
    const tabA = client(storage, scriptedTransport([ok({ createPayment: { payment: made, replayed: true } })]), { joinByParameters: true });
    const bRequests = scriptedTransport([
      (req) => ok({ createPayment: { payment: payment({ idempotencyKey: String(req.variables.idempotencyKey) }), replayed: req.variables.idempotencyKey === 'k-first' } }),
    ]);
    const tabB = client(storage, bRequests, { joinByParameters: true, newKey: () => 'k-second' });
    await tabB.ready;
    // Tab A resumes and settles the first payment; storage no longer holds it.
    const [a] = await tabA.resumePending();
    expect(a.settled).toBe(true);
    expect(storage.load()).toEqual([]);
    // Later, in tab B, the shopper buys the same thing again.
    const second = await tabB.createPayment(input);
    expect(bRequests.requests[0].variables.idempotencyKey, "tab B sent the settled payment's key: it gets the first payment back").not.toBe('k-first');
    expect(second.replayed).toBe(false);
  });

  test("a payment another tab stored and has not settled is joined: it is still the shopper's first click", async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'k-first', params: input, startedAt: '2026-12-04T09:59:00.000Z' });
    const tabB = client(storage, scriptedTransport([created('k-first', { replayed: true })]), { joinByParameters: true });
    const r = await tabB.createPayment(input);
    expect(r).toMatchObject({ idempotencyKey: 'k-first' });
  });

  test('a tab opened before another tab stored an unsettled payment joins it: one read of storage, no new key', async () => {
    const storage = memoryStorage();
    let loads = 0;
    const counted: PendingStorage = { ...storage, singleUser: true, load: () => (loads++, storage.load()) };
    // Tab B is open first: it loaded storage empty.
    const bRequests = scriptedTransport([(req) => created(String(req.variables.idempotencyKey))]);
    const tabB = client(counted, bRequests, { newKey: () => 'k-tab-b' });
    await tabB.ready;
    // Tab A: the shopper clicks Pay; the answer is lost, the payment may be made.
    const tabA = client(storage, scriptedTransport([...down]), { joinByParameters: true, newKey: () => 'k-tab-a' });
    const err = (await tabA.createPayment(input).catch((e: unknown) => e)) as CMPayError;
    expect(err).toMatchObject({ pending: true, idempotencyKey: 'k-tab-a' });
    // The shopper clicks Pay again, in tab B, with the same order.
    loads = 0;
    await tabB.createPayment(input);
    expect(bRequests.requests[0].variables.idempotencyKey, 'tab B made a new key: a second payment').toBe('k-tab-a');
    expect(loads).toBe(1);
  });

  // A transport whose requests wait for the test's answer, or fail once their signal fires.
  const held = () => {
    const answers: Array<() => void> = [];
    const stops: unknown[] = [];
    const step: Step = (req, signal) =>
      new Promise((resolve, reject) => {
        signal.addEventListener('abort', () => reject((stops.push(signal.reason), signal.reason)), { once: true });
        answers.push(() => resolve(created(String(req.variables.idempotencyKey))));
      });
    return { t: scriptedTransport([step, step]), answers, stops };
  };

  test("a second click joined to the first is not aborted by the first click's signal", async () => {
    const { t, answers } = held();
    const c = client(memoryStorage(), t, { joinByParameters: true });
    const ctl = new AbortController();
    const first = c.createPayment(input, { signal: ctl.signal }).catch((e: unknown) => e);
    await expect.poll(() => t.requests.length).toBe(1);
    const key = t.requests[0].variables.idempotencyKey;
    const second = c.createPayment(input); // no signal of its own
    ctl.abort(new Error('first page section unmounted'));
    expect(await first).toMatchObject({ code: 'ABORTED', pending: true, idempotencyKey: key });
    // The second call waits for an answer under the same key (the first
    // request's, or a new one's if the first was stopped before it joined).
    await expect.poll(() => answers.length).toBeGreaterThan(0);
    answers.at(-1)!();
    expect(await second).toMatchObject({ replayed: true, settled: true, idempotencyKey: key });
    expect(new Set(t.requests.map((r) => r.variables.idempotencyKey))).toEqual(new Set([key]));
  });

  test('a request joined by several callers stops once every one of them has aborted', async () => {
    const { t, stops } = held();
    const storage = memoryStorage();
    const c = client(storage, t, { joinByParameters: true });
    const [ctl1, ctl2] = [new AbortController(), new AbortController()];
    const first = c.createPayment(input, { signal: ctl1.signal }).catch((e: unknown) => e);
    await expect.poll(() => t.requests.length).toBe(1);
    // The second caller has joined once it listens to its signal.
    let joined = false;
    const listen = ctl2.signal.addEventListener.bind(ctl2.signal);
    ctl2.signal.addEventListener = ((...args: Parameters<typeof listen>) => ((joined = true), listen(...args))) as typeof listen;
    const second = c.createPayment(input, { signal: ctl2.signal }).catch((e: unknown) => e);
    await expect.poll(() => joined).toBe(true);
    ctl1.abort(new Error('one'));
    expect(await first).toMatchObject({ code: 'ABORTED' });
    expect(stops).toEqual([]);
    ctl2.abort(new Error('two'));
    expect(await second).toMatchObject({ code: 'ABORTED', pending: true });
    expect(stops).toHaveLength(1);
    expect(t.requests).toHaveLength(1);
    expect(keys(storage.load())).toEqual([t.requests[0].variables.idempotencyKey]);
  });

  test("storage that fails to be read again before joining another tab's operation: nothing is sent", async () => {
    const mem = memoryStorage();
    await mem.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'k-first', params: input, startedAt: '2026-12-04T09:59:00.000Z' });
    let loads = 0;
    const storage: PendingStorage = { ...mem, load: () => (++loads > 1 ? Promise.reject(new Error('IndexedDB closed')) : mem.load()) };
    const transport = scriptedTransport([]);
    const tabB = client(storage, transport, { joinByParameters: true });
    await tabB.ready;
    const err = await tabB.createPayment(input).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageError);
    expect(err).toMatchObject({ code: 'STORAGE_LOAD_FAILED' });
    expect(transport.requests).toEqual([]);
  });

  test('indexedDBStorage joins by default, memory and file storage do not, and the option decides over both', () => {
    expect(indexedDBStorage({ name: 'cmpay-join-default' }).singleUser).toBe(true);
    expect(memoryStorage().singleUser).toBeUndefined();
  });
});

describe('an answer that does not judge the operation (a 401, a proxy 403)', () => {
  const proxy403 = { status: 403, retryAfter: null, body: undefined };
  const unauthenticated = gqlError('createPayment', 'UNAUTHENTICATED', {}, 401);

  for (const [name, answer] of [['a proxy 403', proxy403], ['UNAUTHENTICATED', unauthenticated]] as const) {
    test(`${name} after a lost answer keeps the key stored and says so`, async () => {
      const storage = memoryStorage();
      const c = client(storage, scriptedTransport([new TypeError('answer lost'), answer]));
      const err = (await c.createPayment(input).catch((e: unknown) => e)) as CMPayError;
      expect(err).toBeInstanceOf(CMPayError);
      expect(err).toMatchObject({ pending: true, idempotencyKey: 'key-' + keyCount });
      expect(keys(storage.load())).toEqual([err.idempotencyKey]);
    });

    test(`${name} on a stored operation's resume keeps it stored`, async () => {
      const storage = memoryStorage();
      await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'k9', params: input, startedAt: '2026-12-04T10:00:00.000Z' });
      const [outcome] = await client(storage, scriptedTransport([answer])).resumePending();
      expect(outcome).toMatchObject({ settled: false, error: { pending: true } });
      expect(keys(storage.load())).toEqual(['k9']);
    });

    test(`${name} to a first try leaves nothing stored: nothing can have been applied`, async () => {
      const storage = memoryStorage();
      const err = (await client(storage, scriptedTransport([answer])).createPayment(input).catch((e: unknown) => e)) as CMPayError;
      expect(err.pending).toBe(false);
      expect(storage.load()).toEqual([]);
    });
  }

  test("a refusal in one tab keeps a key another tab's unanswered try carried", async () => {
    const storage = memoryStorage();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let sentByA!: () => void;
    const aSent = new Promise<void>((r) => (sentByA = r));
    // Tab A: its token expired; its one try is answered 401, late.
    const tabA = client(storage, scriptedTransport([async () => (sentByA(), await gate, unauthenticated)]));
    const call = tabA.createPayment(input).catch((e: unknown) => e) as Promise<CMPayError>;
    await aSent;
    // Tab B resumes A's stored operation: the server may have made the payment; B's answers are lost.
    const [resumed] = await client(storage, scriptedTransport([new TypeError('answer lost'), new TypeError('answer lost')])).resumePending();
    expect(resumed).toMatchObject({ settled: false, error: { pending: true } });
    release();
    expect(await call).toMatchObject({ code: 'UNAUTHENTICATED', pending: true });
    expect(keys(storage.load())).toEqual([resumed.pending.idempotencyKey]);
  });

  test("a refused tab's resume of an operation another tab sent keeps it: its claim cannot undo the other's try", async () => {
    const storage = memoryStorage();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let sentByA!: () => void;
    const aSent = new Promise<void>((r) => (sentByA = r));
    // Tab A (expired token): its one try is answered 401, late; so is its resume's.
    const tabA = client(storage, scriptedTransport([async () => (sentByA(), await gate, unauthenticated), unauthenticated]));
    const call = tabA.createPayment(input).catch((e: unknown) => e) as Promise<CMPayError>;
    await aSent;
    // Tab B resumes A's operation: the server may have made the payment; B's answers are lost.
    const [resumed] = await client(storage, scriptedTransport([...down])).resumePending();
    expect(resumed).toMatchObject({ settled: false, error: { pending: true } });
    release();
    expect(await call).toMatchObject({ code: 'UNAUTHENTICATED', pending: true });
    // A resumes (same token): it names itself the sender again, and is refused again.
    const [again] = await tabA.resumePending();
    expect(again).toMatchObject({ settled: false, error: { code: 'UNAUTHENTICATED', pending: true } });
    expect(keys(storage.load())).toEqual([resumed.pending.idempotencyKey]);
  });

  test('a NOT_FOUND to a resumed refund (a token bound to another client) keeps it stored', async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'REFUND_PAYMENT', idempotencyKey: 'rf-1', params: { paymentId: 'p1', amount: '1.00' }, startedAt: '2026-12-04T10:00:00.000Z' });
    const [outcome] = await client(storage, scriptedTransport([gqlError('refundPayment', 'NOT_FOUND')])).resumePending();
    expect(outcome).toMatchObject({ settled: false, error: { code: 'NOT_FOUND', pending: true } });
    expect(keys(storage.load())).toEqual(['rf-1']);
  });

  test('a NOT_FOUND to a fresh refund whose only try it answers settles it', async () => {
    const storage = memoryStorage();
    const err = (await client(storage, scriptedTransport([gqlError('refundPayment', 'NOT_FOUND')])).refundPayment({ paymentId: 'nope' }).catch((e: unknown) => e)) as CMPayError;
    expect(err).toMatchObject({ code: 'NOT_FOUND', pending: false });
    expect(storage.load()).toEqual([]);
  });

  test("an answer that judges the operation (BAD_USER_INPUT) settles it even after a lost answer", async () => {
    const storage = memoryStorage();
    const c = client(storage, scriptedTransport([new TypeError('answer lost'), gqlError('createPayment', 'BAD_USER_INPUT')]));
    const err = (await c.createPayment(input).catch((e: unknown) => e)) as CMPayError;
    expect(err).toMatchObject({ code: 'BAD_USER_INPUT', pending: false });
    expect(storage.load()).toEqual([]);
  });
});

describe('a settled operation storage failed to remove', () => {
  test('is never joined nor sent again by this client; resumePending removes it', async () => {
    const mem = memoryStorage();
    let failRemove = true;
    const storage: PendingStorage = {
      ...mem,
      singleUser: true,
      remove: (k) => {
        if (failRemove) {
          failRemove = false;
          throw new Error('QuotaExceededError');
        }
        return mem.remove(k);
      },
    };
    const transport = scriptedTransport([(req) => created(String(req.variables.idempotencyKey)), (req) => created(String(req.variables.idempotencyKey))]);
    const c = client(storage, transport);
    const first = await c.createPayment(input);
    expect(first.settled).toBe(true);
    expect(c.pending()).toEqual([]);
    const second = await c.createPayment(input);
    expect(second.idempotencyKey).not.toBe(first.idempotencyKey);
    expect(second.replayed).toBe(false);
    expect(await c.resumePending()).toEqual([]);
    expect(mem.load()).toEqual([]);
    expect(transport.requests).toHaveLength(2);
  });

  // A storage whose next removal fails (an IndexedDB over its quota).
  const failingRemove = () => {
    const mem = memoryStorage();
    const storage = { ...mem, singleUser: true, failNext: true } as PendingStorage & { failNext: boolean };
    storage.remove = (k) => {
      if (storage.failNext) {
        storage.failNext = false;
        throw new Error('QuotaExceededError');
      }
      return mem.remove(k);
    };
    return { mem, storage };
  };
  const refused = gqlError('refundPayment', 'PAYMENT_STATE_CONFLICT', { status: 'AUTHORIZED' });
  // A capture refused before the payment is AUTHORIZED: its key stays unused (contract).
  const captureConflict = gqlError('capturePayment', 'PAYMENT_STATE_CONFLICT', { status: 'PROCESSING' });
  // unremovable wraps mem so that, while broken(), a settled operation can be
  // neither removed nor replaced by its tombstone.
  const unremovable = (mem: ReturnType<typeof memoryStorage>, broken: () => boolean): PendingStorage => ({
    ...mem,
    load: () => mem.load(),
    put: (op) => {
      if (broken() && (op as { settled?: boolean }).settled) throw new Error('disk full');
      return mem.put(op);
    },
    remove: (key) => {
      if (broken()) throw new Error('disk full');
      return mem.remove(key);
    },
  });
  const refundParams = { paymentId: 'p1', amount: '2.00' };

  test('a refusal that leaves the key unused is marked settled in storage: no page sends it again, resumePending removes it', async () => {
    const { mem, storage } = failingRemove();
    const err = (await client(storage, scriptedTransport([refused])).refundPayment(refundParams).catch((e: unknown) => e)) as CMPayError;
    expect(err).toMatchObject({ code: 'PAYMENT_STATE_CONFLICT', pending: false });
    expect(mem.load()).toMatchObject([{ idempotencyKey: err.idempotencyKey, settled: true }]);
    // The next page: it neither lists, joins nor sends it, and removes it.
    const t = scriptedTransport([(req) => ok({ refundPayment: { payment: payment({ id: 'p1' }), refund: { id: 'r2', amount: '2.00', idempotencyKey: req.variables.idempotencyKey, status: 'SUCCEEDED' }, replayed: false } })]);
    const next = client(storage, t);
    expect(next.pending()).toEqual([]);
    const again = await next.refundPayment(refundParams);
    expect(again.idempotencyKey).not.toBe(err.idempotencyKey);
    expect(await next.resumePending()).toEqual([]);
    expect(mem.load()).toEqual([]);
    expect(t.requests).toHaveLength(1);
  });

  test('a 401 proven unapplied whose removal failed is marked settled too: a page with a working token does not send it', async () => {
    const { mem, storage } = failingRemove();
    const err = (await client(storage, scriptedTransport([gqlError('createPayment', 'UNAUTHENTICATED', {}, 401)])).createPayment(input).catch((e: unknown) => e)) as CMPayError;
    expect(err).toMatchObject({ code: 'UNAUTHENTICATED', pending: false });
    const t = scriptedTransport([]);
    expect(await client(storage, t).resumePending()).toEqual([]);
    expect(t.requests).toEqual([]);
    expect(mem.load()).toEqual([]);
  });

  test('a tombstone keeps no parameters: the payment method token and amounts leave storage once settled', async () => {
    const card = { ...input, method: 'CREDIT_CARD' as const, paymentMethodToken: 'pm_1SecretCardOfTheShopper' };
    // Declined (settled by the answer) and a 401 proven unapplied (settled by the refusal): both removals fail.
    const declined = (req: { variables: Record<string, unknown> }) =>
      ok({ createPayment: { payment: payment({ idempotencyKey: req.variables.idempotencyKey, status: 'DECLINED', declineCode: 'card_declined' }), replayed: false } });
    for (const answer of [declined, gqlError('createPayment', 'UNAUTHENTICATED', {}, 401)]) {
      const { mem, storage } = failingRemove();
      const err = (await client(storage, scriptedTransport([answer])).createPayment(card).catch((e: unknown) => e)) as CMPayError;
      expect(err).toMatchObject({ pending: false });
      const [tombstone] = mem.load();
      expect(tombstone).toEqual({ operation: 'CREATE_PAYMENT', idempotencyKey: err.idempotencyKey, startedAt: expect.any(String), settled: true, params: {} });
      expect(JSON.stringify(mem.load())).not.toContain('pm_1SecretCardOfTheShopper');
      // Still skipped and removed as before.
      const t = scriptedTransport([]);
      const next = client(storage, t);
      expect(next.pending()).toEqual([]);
      expect(await next.resumePending()).toEqual([]);
      expect(mem.load()).toEqual([]);
      expect(t.requests).toEqual([]);
    }
  });

  test('a page opened before the refusal does not join the marked operation', async () => {
    const { mem, storage } = failingRemove();
    // Another page stored the refund; its answer was lost.
    await mem.put({ operation: 'REFUND_PAYMENT', idempotencyKey: 'rf-old', params: refundParams, startedAt: '2026-12-04T10:00:00.000Z' });
    const older = client(storage, scriptedTransport([(req) => ok({ refundPayment: { payment: payment({ id: 'p1' }), refund: { id: 'r2', amount: '2.00', idempotencyKey: req.variables.idempotencyKey, status: 'SUCCEEDED' }, replayed: false } })]));
    expect(keys(older.pending())).toEqual(['rf-old']);
    // This page resumes it: refused, its removal fails.
    const [outcome] = await client(storage, scriptedTransport([refused])).resumePending();
    expect(outcome).toMatchObject({ settled: true, error: { code: 'PAYMENT_STATE_CONFLICT' } });
    // The older page's equal refund is a new one.
    const r = await older.refundPayment(refundParams);
    expect(r.idempotencyKey).not.toBe('rf-old');
    expect(r.replayed).toBe(false);
  });

  test('a capture retried under the key its refusal left unused keeps that key until it has an answer', async () => {
    const mem = memoryStorage();
    let broken = false;
    const storage = unremovable(mem, () => broken);
    const settled: string[] = [];
    const transport = scriptedTransport([
      // Try 1: the payment is not AUTHORIZED yet: refused, the key stays unused (contract).
      captureConflict,
      // Try 2, same key: applied on the server, the answer lost twice.
      new TypeError('socket hang up'),
      new TypeError('socket hang up'),
    ]);
    const c = client(storage, transport, { random: () => 0, onSettled: (op) => void settled.push(op.idempotencyKey) });
    broken = true; // the settled capture can be neither removed nor tombstoned
    await expect(c.capturePayment({ paymentId: 'p1' }, { idempotencyKey: 'cap-1' })).rejects.toMatchObject({ code: 'PAYMENT_STATE_CONFLICT' });
    broken = false;
    // Once AUTHORIZED, the caller captures again under the same, unused key.
    await expect(c.capturePayment({ paymentId: 'p1' }, { idempotencyKey: 'cap-1' })).rejects.toMatchObject({ pending: true });
    expect(mem.load().map((o) => o.idempotencyKey)).toEqual(['cap-1']);
    // resumePending() must send it again (the server replays the capture), not forget it.
    await c.resumePending();
    expect(transport.requests.map((r) => r.operationName)).toEqual(Array(5).fill('CapturePayment')); // 1 refused, 2 lost, 2 resumed
    expect(mem.load().map((o) => o.idempotencyKey)).toEqual(['cap-1']);
    expect(settled).toEqual([]);
  });

  test('an operation settled here whose removal failed is still forgotten by resumePending(), a later one under its key is not', async () => {
    const mem = memoryStorage();
    let broken = true;
    const storage = unremovable(mem, () => broken);
    const transport = scriptedTransport([captureConflict]);
    const c = client(storage, transport);
    await expect(c.capturePayment({ paymentId: 'p1' }, { idempotencyKey: 'cap-2' })).rejects.toMatchObject({ code: 'PAYMENT_STATE_CONFLICT' });
    broken = false;
    // Storage still holds the refused capture: resumePending() removes it unsent.
    const [outcome] = await c.resumePending();
    expect(outcome).toBeUndefined();
    expect(transport.requests).toHaveLength(1);
    expect(mem.load()).toEqual([]);
  });
});

describe('storage that fails to load', () => {
  test('an asynchronous load: every call fails with StorageError and nothing is sent', async () => {
    const transport = scriptedTransport([]);
    const storage: PendingStorage = { load: () => Promise.reject(new Error('InvalidStateError')), put: () => undefined, remove: () => undefined };
    const c = new CMPayClient({ url: 'http://x/graphql', token: 't', storage, transport });
    await expect(c.ready).rejects.toBeInstanceOf(StorageError);
    await expect(c.createPayment(input)).rejects.toMatchObject({ name: 'StorageError', code: 'STORAGE_LOAD_FAILED' });
    await expect(c.resumePending()).rejects.toBeInstanceOf(StorageError);
    expect(() => c.pending()).toThrow(StorageError);
    expect(transport.requests).toEqual([]);
  });

  test('a synchronous load: the constructor throws StorageError', () => {
    const storage: PendingStorage = {
      load: () => {
        throw new Error('not the client JSON');
      },
      put: () => undefined,
      remove: () => undefined,
    };
    expect(() => new CMPayClient({ url: 'http://x/graphql', token: 't', storage, transport: scriptedTransport([]) })).toThrow(StorageError);
  });
});

describe("an operation older than the server's key TTL", () => {
  // fakeClock starts at 2026-12-04T10:00:00Z: these were stored two days before.
  const old = '2026-12-02T10:00:00.000Z';
  const found = (p: Record<string, unknown>[]) => ok({ payments: { edges: p.map((node) => ({ node })) } });
  const withAttempts = (over: Record<string, unknown>, attempts: Record<string, unknown>[]) => ok({ payment: { ...payment(over), attempts } });

  test('a create is looked up by client and key and settled as a replay, never sent again', async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'old-1', params: input, startedAt: old });
    const transport = scriptedTransport([found([payment({ id: 'p-old', idempotencyKey: 'old-1' })])]);
    const [outcome] = await client(storage, transport).resumePending();
    expect(outcome).toMatchObject({ settled: true, result: { replayed: true, payment: { id: 'p-old' } } });
    expect(transport.requests.map((r) => [r.operationName, r.variables])).toEqual([
      ['PaymentsByKey', { clientId: 'c1', idempotencyKey: 'old-1' }],
    ]);
    expect(storage.load()).toEqual([]);
  });

  test('a create nobody made is made under its key, renewed in storage first', async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'old-2', params: input, startedAt: old });
    const renewed: string[] = [];
    const watched: PendingStorage = { ...storage, put: (op) => (renewed.push(op.startedAt), storage.put(op)) };
    const transport = scriptedTransport([found([]), created('old-2')]);
    const [outcome] = await client(watched, transport).resumePending();
    expect(outcome).toMatchObject({ settled: true, result: { replayed: false } });
    expect(transport.requests.map((r) => r.operationName)).toEqual(['PaymentsByKey', 'CreatePayment']);
    expect(transport.requests[1].variables.idempotencyKey).toBe('old-2');
    expect(renewed).toEqual(['2026-12-04T10:00:00.000Z']);
  });

  test('a refund found among the payment refunds is a replay; one nobody made is not sent', async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'REFUND_PAYMENT', idempotencyKey: 'r-made', params: { paymentId: 'p1', amount: '1' }, startedAt: old });
    await storage.put({ operation: 'REFUND_PAYMENT', idempotencyKey: 'r-lost', params: { paymentId: 'p1', amount: '1' }, startedAt: '2026-12-02T10:00:01.000Z' });
    const refund = { id: 'rf1', paymentId: 'p1', amount: '1.00', reason: null, idempotencyKey: 'r-made', createdAt: old };
    const p1 = { id: 'p1', refunds: [refund], status: 'PARTIALLY_REFUNDED' };
    const transport = scriptedTransport([withAttempts(p1, []), withAttempts(p1, [])]);
    const [made, lost] = await client(storage, transport).resumePending();
    expect(made).toMatchObject({ settled: true, result: { replayed: true } });
    expect((made.result as { refund?: unknown }).refund).toMatchObject({ id: 'rf1' });
    expect(lost.error).toBeInstanceOf(ExpiredOperationError);
    expect(lost).toMatchObject({ settled: true, error: { pending: false, operation: 'REFUND_PAYMENT', code: 'OPERATION_EXPIRED' } });
    expect(transport.requests.map((r) => r.operationName)).toEqual(['PaymentAttempts', 'PaymentAttempts']);
    expect(storage.load()).toEqual([]);
  });

  test('a refund found under its key but made long before it was stored is an older operation\'s, under the key reused: not its answer', async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'REFUND_PAYMENT', idempotencyKey: 'order-9', params: { paymentId: 'p1', amount: '3.00' }, startedAt: old });
    // Made under the same key a day and a half earlier, before the server forgot it.
    const older = { id: 'rf-old', paymentId: 'p1', amount: '3.00', reason: null, idempotencyKey: 'order-9', createdAt: '2026-12-01T00:00:00Z', status: 'SUCCEEDED' };
    const transport = scriptedTransport([withAttempts({ id: 'p1', refunds: [older], status: 'PARTIALLY_REFUNDED' }, [])]);
    const [outcome] = await client(storage, transport).resumePending();
    expect(outcome.error).toBeInstanceOf(ExpiredOperationError);
    expect(outcome).toMatchObject({ settled: true, error: { code: 'OPERATION_EXPIRED' } });
  });

  test('a refund found under its key with another amount or reason is IDEMPOTENCY_KEY_REUSED, not its answer', async () => {
    for (const [made, differ] of [[{ amount: '2.00' }, ['amount']], [{ reason: 'damaged' }, ['reason']]] as const) {
      const storage = memoryStorage();
      await storage.put({ operation: 'REFUND_PAYMENT', idempotencyKey: 'order-10', params: { paymentId: 'p1', amount: '3' }, startedAt: old });
      const other = { id: 'rf-other', paymentId: 'p1', amount: '3.00', reason: null, idempotencyKey: 'order-10', createdAt: old, status: 'SUCCEEDED', ...made };
      const transport = scriptedTransport([withAttempts({ id: 'p1', refunds: [other], status: 'PARTIALLY_REFUNDED' }, [])]);
      const [outcome] = await client(storage, transport).resumePending();
      expect(outcome.error).toBeInstanceOf(KeyReusedError);
      expect(outcome).toMatchObject({ settled: true, error: { differingFields: differ, paymentId: 'p1', pending: false } });
      expect(storage.load()).toEqual([]);
    }
  });

  test('a capture applied under its key is a replay; one nobody made is sent again', async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'CAPTURE_PAYMENT', idempotencyKey: 'c-made', params: { paymentId: 'p1' }, startedAt: old });
    await storage.put({ operation: 'CAPTURE_PAYMENT', idempotencyKey: 'c-lost', params: { paymentId: 'p2' }, startedAt: '2026-12-02T10:00:01.000Z' });
    const transport = scriptedTransport([
      withAttempts({ id: 'p1' }, [{ operation: 'CAPTURE_PAYMENT', idempotencyKey: 'c-made', outcome: 'APPLIED' }]),
      withAttempts({ id: 'p2', status: 'AUTHORIZED' }, [{ operation: 'CAPTURE_PAYMENT', idempotencyKey: 'c-other', outcome: 'APPLIED' }]),
      ok({ capturePayment: { payment: payment({ id: 'p2' }), replayed: false } }),
    ]);
    const [made, lost] = await client(storage, transport).resumePending();
    expect(made).toMatchObject({ settled: true, result: { replayed: true, payment: { id: 'p1' } } });
    expect(lost).toMatchObject({ settled: true, result: { replayed: false, payment: { id: 'p2' } } });
    expect(transport.requests.map((r) => r.operationName)).toEqual(['PaymentAttempts', 'PaymentAttempts', 'CapturePayment']);
  });

  test('a create is found as the server made it: client id in NFC, amount by value whatever its sign or exponent', async () => {
    for (const params of [{ ...input, clientId: 'cafe\u0301' }, { ...input, amount: '+10.50' }, { ...input, amount: '1.05e1' }, { ...input, amount: '1050E-2' }]) {
      const storage = memoryStorage();
      await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'old-n', params, startedAt: old });
      const transport = scriptedTransport([found([payment({ id: 'p-n', idempotencyKey: 'old-n', clientId: params.clientId.normalize('NFC') })])]);
      const [outcome] = await client(storage, transport).resumePending();
      expect(outcome.error, JSON.stringify(params)).toBeUndefined();
      expect(outcome).toMatchObject({ settled: true, result: { replayed: true, payment: { id: 'p-n' } } });
      expect(transport.requests[0].variables.clientId).toBe(params.clientId.normalize('NFC'));
    }
  });

  test('a capture or cancel whose attempt is APPLIED but whose effect the payment lacks was refused: PROCESSOR_REFUSED', async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'CAPTURE_PAYMENT', idempotencyKey: 'cap-q', params: { paymentId: 'p1' }, startedAt: old });
    await storage.put({ operation: 'CANCEL_PAYMENT', idempotencyKey: 'can-q', params: { paymentId: 'p2' }, startedAt: '2026-12-02T10:00:01.000Z' });
    // What the server answers after a capture the processor refused (the
    // payment was canceled at the processor meanwhile), and after a cancel it
    // refused (the payment is still AUTHORIZED): the attempt APPLIED, nothing pending.
    const transport = scriptedTransport([
      withAttempts({ id: 'p1', status: 'CANCELED', capturedAmount: '0.00', capturedAt: null, canceledAt: old, pendingOperation: null }, [
        { operation: 'CREATE_PAYMENT', idempotencyKey: 'k', outcome: 'CREATED' },
        { operation: 'CAPTURE_PAYMENT', idempotencyKey: 'cap-q', outcome: 'APPLIED' },
      ]),
      withAttempts({ id: 'p2', status: 'AUTHORIZED', capturedAmount: '0.00', capturedAt: null, pendingOperation: null }, [
        { operation: 'CANCEL_PAYMENT', idempotencyKey: 'can-q', outcome: 'APPLIED' },
      ]),
    ]);
    const out = await client(storage, transport).resumePending();
    for (const o of out) {
      expect(o.result, `${o.pending.operation} refused by the processor answered as a result`).toBeUndefined();
      expect(o.error).toBeInstanceOf(ProcessorRefusedError);
      expect(o).toMatchObject({ settled: true, error: { code: 'PROCESSOR_REFUSED', pending: false } });
    }
    expect(transport.requests.map((r) => r.operationName)).toEqual(['PaymentAttempts', 'PaymentAttempts']);
    // The newest attempts only: a payment may have thousands.
    expect(transport.requests[0].query).toContain('attempts(last: 100)');
    expect(storage.load()).toEqual([]);
  });

  test('a capture still waiting for the processor under its key is a replay, not settled', async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'CAPTURE_PAYMENT', idempotencyKey: 'cap-w', params: { paymentId: 'p1' }, startedAt: old });
    const transport = scriptedTransport([
      withAttempts({ id: 'p1', status: 'AUTHORIZED', pendingOperation: 'CAPTURE_PAYMENT' }, [
        { operation: 'CAPTURE_PAYMENT', idempotencyKey: 'cap-w', outcome: 'APPLIED' },
      ]),
    ]);
    const [outcome] = await client(storage, transport).resumePending();
    expect(outcome).toMatchObject({ settled: false, result: { replayed: true, settled: false } });
    expect(keys(storage.load())).toEqual(['cap-w']);
  });

  test('a lookup the server refuses (BAD_USER_INPUT, a list too long) keeps the operation stored, says why, sends nothing', async () => {
    for (const [code, field] of [['BAD_USER_INPUT', 'payments'], ['COMPLEXITY_LIMIT_EXCEEDED', 'payments']]) {
      const storage = memoryStorage();
      await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'old-6', params: input, startedAt: old });
      const transport = scriptedTransport([gqlError(field, code)]);
      const [outcome] = await client(storage, transport).resumePending();
      expect(outcome).toMatchObject({ settled: false, error: { code, pending: true, idempotencyKey: 'old-6' } });
      expect(outcome.error?.message).toMatch(/stays stored and was not sent again/);
      expect(transport.requests.map((r) => r.operationName)).toEqual(['PaymentsByKey']);
      expect(keys(storage.load())).toEqual(['old-6']);
    }
  });

  test('a create whose client id has a NUL, which the server never stores, is sent: its refusal settles it', async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'old-8', params: { ...input, clientId: 'c\u0000' }, startedAt: old });
    const transport = scriptedTransport([gqlError('createPayment', 'BAD_USER_INPUT', { field: 'clientId' })]);
    const [outcome] = await client(storage, transport).resumePending();
    expect(outcome).toMatchObject({ settled: true, error: { code: 'BAD_USER_INPUT', pending: false } });
    expect(transport.requests.map((r) => r.operationName)).toEqual(['CreatePayment']);
    expect(storage.load()).toEqual([]);
  });

  test('more payments under the key than one answer lists, none of them this one: inconclusive, kept stored', async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'old-7', params: input, startedAt: old });
    const other = payment({ idempotencyKey: 'old-7', amount: '99.00' });
    const transport = scriptedTransport([ok({ payments: { edges: [{ node: other }], pageInfo: { hasNextPage: true } } })]);
    const [outcome] = await client(storage, transport).resumePending();
    expect(outcome).toMatchObject({ settled: false, error: { code: 'LOOKUP_INCONCLUSIVE', pending: true } });
    expect(keys(storage.load())).toEqual(['old-7']);
  });

  test('a key found on a payment with other parameters is IDEMPOTENCY_KEY_REUSED, and settles', async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'old-3', params: input, startedAt: old });
    const transport = scriptedTransport([found([payment({ idempotencyKey: 'old-3', amount: '99.00' })])]);
    const [outcome] = await client(storage, transport).resumePending();
    expect(outcome.error).toBeInstanceOf(KeyReusedError);
    expect(outcome).toMatchObject({ settled: true, error: { differingFields: ['amount'] } });
  });

  test('a call with equal parameters joins it: nothing made under it, it is made as this call, renewed', async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'old-4', params: input, startedAt: old });
    const transport = scriptedTransport([found([]), (req) => created(String(req.variables.idempotencyKey))]);
    const r = await client(storage, transport, { joinByParameters: true }).createPayment(input);
    expect(r).toMatchObject({ idempotencyKey: 'old-4', replayed: false, settled: true });
    expect(transport.requests.map((q) => q.operationName)).toEqual(['PaymentsByKey', 'CreatePayment']);
    expect(storage.load()).toEqual([]);
  });

  test('a call with equal parameters joins it: made under it, it is answered as a replay', async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'old-6', params: input, startedAt: old });
    const transport = scriptedTransport([found([payment({ id: 'p-6', idempotencyKey: 'old-6' })])]);
    const r = await client(storage, transport, { joinByParameters: true }).createPayment(input);
    expect(r).toMatchObject({ idempotencyKey: 'old-6', replayed: true, payment: { id: 'p-6' } });
    expect(storage.load()).toEqual([]);
  });

  test('a call with equal parameters whose lookup fails makes no new key: the stale one stays, pending', async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'old-7', params: input, startedAt: old });
    const transport = scriptedTransport([gqlError('payments', 'UNAUTHENTICATED', {}, 401)]);
    const err = (await client(storage, transport, { joinByParameters: true }).createPayment(input).catch((e: unknown) => e)) as CMPayError;
    expect(err).toMatchObject({ pending: true, idempotencyKey: 'old-7' });
    expect(transport.requests.map((q) => q.operationName)).toEqual(['PaymentsByKey']);
    expect(keys(storage.load())).toEqual(['old-7']);
  });

  test('a refund with equal parameters whose stale twin nobody made is made now, under a key of its own', async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'REFUND_PAYMENT', idempotencyKey: 'old-r', params: { paymentId: 'p-r', amount: '1.00' }, startedAt: old });
    const refund = (key: string) => ({ id: 'r1', idempotencyKey: key, amount: '1.00', status: 'SUCCEEDED', createdAt: old });
    const transport = scriptedTransport([
      withAttempts({ id: 'p-r' }, []),
      (req) => ok({ refundPayment: { payment: payment({ id: 'p-r' }), refund: refund(String(req.variables.idempotencyKey)), replayed: false } }),
    ]);
    const r = await client(storage, transport, { joinByParameters: true }).refundPayment({ paymentId: 'p-r', amount: '1.00' });
    expect(r.idempotencyKey).not.toBe('old-r');
    expect(transport.requests.map((q) => q.operationName)).toEqual(['PaymentAttempts', 'RefundPayment']);
    expect(storage.load()).toEqual([]);
  });

  test("a caller's key another client stored after this one loaded is looked up, not sent blindly", async () => {
    const storage = memoryStorage();
    const tB = scriptedTransport([found([payment({ id: 'p-7', idempotencyKey: 'order-7' })])]);
    const b = client(storage, tB);
    await b.ready;
    // Another client then stored order-7 two days ago; its answer was lost.
    await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'order-7', params: input, startedAt: old });
    const r = await b.createPayment(input, { idempotencyKey: 'order-7' });
    expect(r).toMatchObject({ replayed: true, payment: { id: 'p-7' } });
    expect(tB.requests.map((q) => q.operationName)).toEqual(['PaymentsByKey']);
  });

  test('a shopper who pays again in the same tab after the first create went stale pays once', async () => {
    const storage = memoryStorage();
    const clock = fakeClock();
    const ttl = { idempotencyKeyTTL: '24h', joinByParameters: true, clock };
    // Day 1: offline, the click's create never reaches the server.
    const tab = client(storage, scriptedTransport([...down, found([]), (req) => created(String(req.variables.idempotencyKey))]), ttl);
    const first = (await tab.createPayment(input).catch((e: unknown) => e)) as CMPayError;
    expect(first.pending).toBe(true);
    // 22 hours later (past nine tenths of the TTL) the shopper clicks Pay again.
    await clock.sleep(22 * 3_600_000);
    const again = await tab.createPayment(input);
    expect(again.idempotencyKey).toBe(first.idempotencyKey);
    // The next page load finds nothing left to send.
    const t2 = scriptedTransport([]);
    expect(await client(storage, t2, ttl).resumePending()).toEqual([]);
    expect(t2.requests).toEqual([]);
  });

  test('a lookup that cannot be answered (a 401) keeps the operation stored', async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'old-5', params: input, startedAt: old });
    const transport = scriptedTransport([gqlError('payments', 'UNAUTHENTICATED', {}, 401)]);
    const [outcome] = await client(storage, transport).resumePending();
    expect(outcome).toMatchObject({ settled: false, error: { code: 'UNAUTHENTICATED', pending: true } });
    expect(keys(storage.load())).toEqual(['old-5']);
  });

  test('retries stop once the key may be forgotten, and the operation is looked up instead', async () => {
    const storage = memoryStorage();
    // A TTL of 10 s less its tenth; the first backoff waits 9.9 s.
    const c = client(storage, scriptedTransport([new TypeError('answer lost'), found([payment({ id: 'p-late', idempotencyKey: 'key-x' })])]), {
      idempotencyKeyTTL: '10s',
      newKey: () => 'key-x',
      random: () => 0.99,
      retry: { maxAttempts: 3, baseDelayMs: 10_000 },
    });
    const r = await c.createPayment(input);
    expect(r).toMatchObject({ replayed: true, payment: { id: 'p-late' } });
  });

  test('the TTL takes milliseconds or the server setting; anything else is refused', () => {
    expect(parseDuration('24h')).toBe(86_400_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration(1500)).toBe(1500);
    expect(() => parseDuration('24 hours')).toThrow(TypeError);
    expect(() => parseDuration(0)).toThrow(TypeError);
    expect(() => client(memoryStorage(), scriptedTransport([]), { idempotencyKeyTTL: 'soon' })).toThrow(TypeError);
  });

  test('a refund whose last try left 250 ms before it turned stale is not declared "nothing was done" while that try may be applied', async () => {
    const clock = fakeClock();
    // Stored 100 ms short of nine tenths of the TTL: fresh, so it is sent.
    const startedAt = new Date(clock.now() - 24 * 3_600_000 * 0.9 + 100).toISOString();
    const storage = memoryStorage();
    await storage.put({ operation: 'REFUND_PAYMENT', idempotencyKey: 'r-edge', params: { paymentId: 'p1', amount: '1.00' }, startedAt });
    const notYet = withAttempts({ id: 'p1', refunds: [], refundCount: 0, status: 'CAPTURED' }, []);
    const transport = scriptedTransport([
      // The request reached the server; the connection dropped before its answer.
      new TypeError('socket hang up'),
      // 250 ms later the op is stale: the lookup reads the payment before the
      // server committed the first try's refund (still waiting on a lock).
      notYet,
      // Looked up again once no try can still be applied: nothing was made.
      notYet,
    ]);
    const c = client(storage, transport, { clock, random: () => 1, retry: { maxAttempts: 3 } });
    const [outcome] = await c.resumePending();
    expect(transport.requests.map((r) => r.operationName)).toEqual(['RefundPayment', 'PaymentAttempts']);
    expect(outcome).toMatchObject({ settled: false, error: { code: 'LOOKUP_INCONCLUSIVE', pending: true } });
    expect(storage.load()).toMatchObject([{ idempotencyKey: 'r-edge', lastSentAt: new Date(clock.now() - 250 + 1_000).toISOString() }]);
    // Another process loading it knows when its last try left (at the latest: lastSentAt is dated 1 s ahead); it
    // waits the attempt timeout (15 s), the server's bound on a refund (25 s) and the margin (5 s).
    const later = fakeClock();
    await later.sleep(clock.now() - later.now() + 1_000 + 15_000 + 25_000 + 5_000);
    const [gone] = await client(storage, transport, { clock: later }).resumePending();
    expect(gone).toMatchObject({ settled: true, error: { code: 'OPERATION_EXPIRED' } });
    expect(storage.load()).toEqual([]);
  });

  test('a try near the stale margin leaves no later than the lastSentAt it stored, or not at all', async () => {
    for (const writeMs of [300, 20_000]) {
      const clock = fakeClock();
      const startedAt = new Date(clock.now() - 24 * 3_600_000 * 0.9 + 100).toISOString();
      const mem = memoryStorage();
      await mem.put({ operation: 'REFUND_PAYMENT', idempotencyKey: 'r-slow', params: { paymentId: 'p1', amount: '1.00' }, startedAt });
      // A write of lastSentAt that takes writeMs (a stalled fsync, an IndexedDB transaction queued behind others).
      const slow: PendingStorage = {
        ...mem,
        load: () => mem.load(),
        put: async (op) => {
          if (op.lastSentAt) await clock.sleep(writeMs);
          return mem.put(op);
        },
      };
      const notYet = withAttempts({ id: 'p1', refunds: [], refundCount: 0, status: 'CAPTURED' }, []);
      let leftAt = 0;
      const inner = scriptedTransport([new TypeError('socket hang up'), notYet, notYet]);
      const transport: Transport = Object.assign((req: Parameters<Transport>[0], s: AbortSignal) => {
        if (req.operationName === 'RefundPayment' && leftAt === 0) leftAt = clock.now();
        return inner(req, s);
      }, { requests: inner.requests });
      const c = client(slow, transport, { clock, random: () => 1, retry: { maxAttempts: 3 } });
      const [outcome] = await c.resumePending();
      if (writeMs < 1_000) {
        expect(outcome).toMatchObject({ settled: false, error: { code: 'LOOKUP_INCONCLUSIVE', pending: true } });
        expect(leftAt).toBeGreaterThan(0);
        expect(Date.parse(mem.load()[0].lastSentAt!)).toBeGreaterThanOrEqual(leftAt);
      } else {
        expect(outcome).toMatchObject({ settled: false, error: { code: 'STORAGE_FAILED', pending: true } });
        expect(leftAt).toBe(0);
      }
    }
  });

  test('a try sent far from the stale margin is not worth a write', async () => {
    const storage = memoryStorage();
    const writes: string[] = [];
    const watched: PendingStorage = { ...storage, put: (op) => (writes.push(op.lastSentAt ?? 'stored'), storage.put(op)) };
    await client(watched, scriptedTransport([created('k-far')])).createPayment(input, { idempotencyKey: 'k-far' });
    expect(writes).toEqual(['stored']);
  });

  test('a try whose lastSentAt cannot be written does not leave', async () => {
    const clock = fakeClock();
    const startedAt = new Date(clock.now() - 24 * 3_600_000 * 0.9 + 100).toISOString();
    const storage = memoryStorage();
    await storage.put({ operation: 'REFUND_PAYMENT', idempotencyKey: 'r-nowrite', params: { paymentId: 'p1', amount: '1.00' }, startedAt });
    const failing: PendingStorage = { ...storage, load: () => storage.load(), put: () => { throw new Error('disk full'); } };
    const transport = scriptedTransport([]);
    const [outcome] = await client(failing, transport, { clock }).resumePending();
    expect(transport.requests).toEqual([]);
    expect(outcome).toMatchObject({ settled: false, error: { code: 'STORAGE_FAILED', pending: true } });
  });

  test('a create is not answered with an equal payment made under its key long before it was stored (an older order)', async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'order-42', params: input, startedAt: old });
    // The server holds an equal payment made under the same key a month earlier (its key long forgotten).
    const monthOld = payment({ id: 'p-nov', idempotencyKey: 'order-42', createdAt: '2026-11-04T10:00:00Z', status: 'CAPTURED' });
    const made = payment({ id: 'p-dec', idempotencyKey: 'order-42', createdAt: '2026-12-04T10:00:00Z', status: 'CAPTURED' });
    const transport = scriptedTransport([found([monthOld]), ok({ createPayment: { payment: made, replayed: false } })]);
    const [outcome] = await client(storage, transport).resumePending();
    expect(transport.requests.map((r) => r.operationName)).toEqual(['PaymentsByKey', 'CreatePayment']);
    expect(transport.requests[1].variables.idempotencyKey).toBe('order-42');
    expect(outcome).toMatchObject({ settled: true, result: { replayed: false, payment: { id: 'p-dec' } } });
  });

  test('a create made is answered with its own payment, not an older equal one under its key', async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'order-43', params: input, startedAt: old });
    const monthOld = payment({ id: 'p-nov2', idempotencyKey: 'order-43', createdAt: '2026-11-04T10:00:00Z', status: 'CAPTURED' });
    // The operation's own payment: made at its first send, whose answer was lost.
    const own = payment({ id: 'p-dec2', idempotencyKey: 'order-43', createdAt: '2026-12-02T10:00:01Z', status: 'CAPTURED' });
    const transport = scriptedTransport([found([own, monthOld])]);
    const [outcome] = await client(storage, transport).resumePending();
    expect(outcome).toMatchObject({ settled: true, result: { replayed: true, payment: { id: 'p-dec2' } } });
  });
});

describe('a code CMPay does not send', () => {
  // A gateway in front of the API that timed out answers in GraphQL's shape
  // with its own code (Apollo Router's traffic shaping: REQUEST_TIMEOUT),
  // after it forwarded the request: the payment may have been made.
  const cases = [
    ['a 504 with GATEWAY_TIMEOUT', gqlError('createPayment', 'GATEWAY_TIMEOUT', {}, 504)],
    ["a router's REQUEST_TIMEOUT as 504", gqlError('createPayment', 'REQUEST_TIMEOUT', {}, 504)],
    ["a router's REQUEST_TIMEOUT as 200", gqlError('createPayment', 'REQUEST_TIMEOUT', {}, 200)],
  ] as const;
  for (const [name, answer] of cases) {
    test(`${name} keeps the key: the request may have been applied`, async () => {
      const storage = memoryStorage();
      const err = (await client(storage, scriptedTransport([answer, answer])).createPayment(input).catch((e: unknown) => e)) as CMPayError;
      expect(err).toBeInstanceOf(CMPayError);
      expect(err.pending, 'the key was forgotten').toBe(true);
      expect(keys(storage.load())).toEqual([err.idempotencyKey]);
    });
  }

  test('with a 5xx it is retried like a 5xx without a code', async () => {
    const t = scriptedTransport([gqlError('createPayment', 'GATEWAY_TIMEOUT', {}, 504), (req) => created(String(req.variables.idempotencyKey))]);
    const r = await client(memoryStorage(), t).createPayment(input);
    expect(r.settled).toBe(true);
    expect(t.requests).toHaveLength(2);
  });

  test('a 429 whose code is not RATE_LIMITED is retried', async () => {
    const t = scriptedTransport([gqlError('createPayment', 'TOO_MANY_REQUESTS', {}, 429), (req) => created(String(req.variables.idempotencyKey))]);
    await client(memoryStorage(), t).createPayment(input);
    expect(t.requests).toHaveLength(2);
  });
});

describe('a put that fails', () => {
  const failingPut = (inner: PendingStorage, removeFails: boolean): PendingStorage => {
    let failNext = true;
    return {
      load: () => inner.load(),
      remove: async (k) => {
        if (removeFails) throw new Error('storage gone');
        await inner.remove(k);
      },
      // The write committed; its acknowledgement was lost.
      put: async (op) => {
        await inner.put(op);
        if (failNext) {
          failNext = false;
          throw new Error('commit acknowledgement lost');
        }
      },
    };
  };

  test('after writing the key: the key is removed before the caller hears "nothing was sent"', async () => {
    const inner = memoryStorage();
    const err = (await client(failingPut(inner, false), scriptedTransport([])).createPayment(input).catch((e: unknown) => e)) as CMPayError;
    expect(err).toBeInstanceOf(StorageError);
    expect(err).toMatchObject({ pending: false });
    expect(err.message).toContain('nothing was sent');
    expect(inner.load()).toEqual([]);
  });

  test("that is refused (storage full): the message names the storage's error and what to do, and nothing is sent", async () => {
    const inner = memoryStorage();
    const full: PendingStorage = {
      ...inner,
      put: async () => {
        throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
      },
    };
    const t = scriptedTransport([]);
    const err = (await client(full, t).createPayment(input).catch((e: unknown) => e)) as CMPayError;
    expect(err).toBeInstanceOf(StorageError);
    expect(err).toMatchObject({ pending: false, code: 'STORAGE_FAILED' });
    expect(err.message).toContain('QuotaExceededError');
    expect(err.message).toContain('try again once storage accepts writes');
    expect(t.requests).toEqual([]);
    expect(inner.load()).toEqual([]);
  });

  test('whose removal fails too: the operation stays pending and the next equal call sends it, not a new key', async () => {
    const inner = memoryStorage();
    const t = scriptedTransport([(req) => created(String(req.variables.idempotencyKey))]);
    const c = client(failingPut(inner, true), t, { joinByParameters: true });
    const err = (await c.createPayment(input).catch((e: unknown) => e)) as CMPayError;
    expect(err).toBeInstanceOf(StorageError);
    expect(err).toMatchObject({ pending: true });
    expect(err.message).not.toContain('nothing was sent');
    expect(c.pending().map((o) => o.idempotencyKey)).toEqual([err.idempotencyKey]);
    const r = await c.createPayment(input);
    expect(r.idempotencyKey).toBe(err.idempotencyKey);
    expect(t.requests).toHaveLength(1);
  });

  test('an onStored that throws: the call rejects pending, and the stored operation is sent by the next call', async () => {
    const storage = memoryStorage();
    let throwing = true;
    const t = scriptedTransport([(req) => created(String(req.variables.idempotencyKey))]);
    const c = client(storage, t, {
      joinByParameters: true,
      onStored: () => {
        if (throwing) throw new Error('analytics down');
      },
    });
    const err = (await c.createPayment(input).catch((e: unknown) => e)) as CMPayError;
    expect(err).toBeInstanceOf(CMPayError);
    expect(err).toMatchObject({ code: 'ON_STORED_FAILED', pending: true });
    expect(t.requests).toEqual([]);
    throwing = false;
    const r = await c.createPayment(input);
    expect(r.idempotencyKey).toBe(err.idempotencyKey);
  });

  test('whose removal fails too, without joining: the error says to call again with the key, not the parameters', async () => {
    const err = (await client(failingPut(memoryStorage(), true), scriptedTransport([])).createPayment(input).catch((e: unknown) => e)) as CMPayError;
    expect(err).toMatchObject({ pending: true });
    expect(err.message).toContain('call again with the same key, or resumePending()');
    expect(err.message).not.toContain('parameters');
    const joining = (await client(failingPut(memoryStorage(), true), scriptedTransport([]), { joinByParameters: true }).createPayment(input).catch((e: unknown) => e)) as CMPayError;
    expect(joining.message).toContain('call again with the same key (or parameters)');
  });
});

describe('discard', () => {
  test('forgets a stored operation for good: it is neither joined nor resumed', async () => {
    const storage = memoryStorage();
    await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'stuck', params: input, startedAt: '2026-12-02T10:00:00.000Z' });
    const t = scriptedTransport([]);
    const c = client(storage, t, { joinByParameters: true });
    await c.discard('stuck');
    expect(storage.load()).toEqual([]);
    expect(c.pending()).toEqual([]);
    expect(await c.resumePending()).toEqual([]);
    expect(t.requests).toEqual([]);
  });
});

describe('an onSettled that throws', () => {
  test('changes no answer: the payment made is answered, the throw is reported, and paying again joins nothing', async () => {
    const warned: unknown[][] = [];
    const warn = vi.spyOn(console, 'warn').mockImplementation((...args: unknown[]) => void warned.push(args));
    try {
      const storage = memoryStorage();
      const t = scriptedTransport([(req) => created(String(req.variables.idempotencyKey)), (req) => created(String(req.variables.idempotencyKey))]);
      const c = client(storage, t, {
        joinByParameters: true,
        onSettled: () => {
          throw new Error('analytics down');
        },
      });
      const first = await c.createPayment(input);
      expect(first).toMatchObject({ settled: true, replayed: false });
      expect(String(warned[0]?.[1])).toContain('analytics down');
      expect(storage.load()).toEqual([]);
      // A rejecting callback is reported the same way, and the resume answers too.
      await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'k-resumed', params: { ...input, amount: '1.00' }, startedAt: '2026-12-04T10:00:00.000Z' });
      const rejecting = client(storage, scriptedTransport([created('k-resumed', { amount: '1.00' })]), { onSettled: () => Promise.reject(new Error('async analytics down')) });
      const [resumed] = await rejecting.resumePending();
      expect(resumed).toMatchObject({ settled: true, result: { idempotencyKey: 'k-resumed' } });
      await expect.poll(() => warned.map((w) => String(w[1]))).toContain('Error: async analytics down');
    } finally {
      warn.mockRestore();
    }
  });

  test('in waitForSettled: the settled payment is answered', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      const storage = memoryStorage();
      await storage.put({ operation: 'CREATE_PAYMENT', idempotencyKey: 'k-wait', params: input, startedAt: '2026-12-04T10:00:00.000Z' });
      const settledPayment = payment({ id: 'p-wait', idempotencyKey: 'k-wait' });
      const c = client(storage, scriptedTransport([ok({ payment: settledPayment })]), {
        subscriber: fakeSubscriber().subscriber,
        onSettled: () => {
          throw new Error('analytics down');
        },
      });
      expect(await c.waitForSettled('p-wait')).toMatchObject({ id: 'p-wait' });
      expect(storage.load()).toEqual([]);
      expect(warn).toHaveBeenCalledOnce();
    } finally {
      warn.mockRestore();
    }
  });
});

describe('a token that may not subscribe (payments:create)', () => {
  // A clock whose sleeps are recorded and end on the next turn of the event
  // loop: a watch that subscribed again for ever would spin without starving
  // the test's own timers.
  const turningClock = (): Clock & { sleeps: number[] } => {
    const clock = fakeClock();
    return {
      ...clock,
      sleep: async (ms, signal) => {
        await clock.sleep(ms, signal);
        await new Promise((r) => setTimeout(r, 0));
      },
    };
  };
  const refusal = (code: string) => [{ message: `${code}: this token lacks the scope payments:read`, path: ['paymentEvents'], extensions: { code } }];
  // graphql-sse's NetworkError for an answer that is not 2xx.
  const httpError = (status: number) => Object.assign(new Error(`Server responded with ${status}`), { response: { ok: false, status, statusText: '' } });

  test.each<[string, SubscriptionStep, string]>([
    ['FORBIDDEN over WebSocket (the operation refused)', { throws: refusal('FORBIDDEN') }, 'FORBIDDEN'],
    ['FORBIDDEN over SSE (a result with errors)', { yields: { data: null, errors: refusal('FORBIDDEN') } }, 'FORBIDDEN'],
    ['UNAUTHENTICATED in a result', { yields: { data: null, errors: refusal('UNAUTHENTICATED') } }, 'UNAUTHENTICATED'],
    ['an HTTP 401 over SSE', { throws: httpError(401) }, 'UNAUTHENTICATED'],
    ["a proxy's HTTP 403 over SSE", { throws: httpError(403) }, 'FORBIDDEN'],
  ])('%s: no second subscribe, said once, and waitForSettled settles by polling', async (_name, step, code) => {
    const processing = payment({ id: 'p-ro', status: 'PROCESSING', capturedAmount: '0.00' });
    const later = payment({ id: 'p-ro2', status: 'PROCESSING', capturedAmount: '0.00' });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const transport = scriptedTransport([
      ok({ payment: processing }),
      async () => (await gate, ok({ payment: processing })),
      ok({ payment: { ...processing, status: 'CAPTURED', capturedAmount: '10.50' } }),
      ok({ payment: later }),
      ok({ payment: { ...later, status: 'CAPTURED', capturedAmount: '10.50' } }),
    ]);
    const subs = scriptedSubscriber([step]);
    const refused: AuthError[] = [];
    const clock = turningClock();
    const c = client(memoryStorage(), transport, { subscriber: subs.subscriber, clock, pollIntervalMs: 1_000, onEventsRefused: (e) => refused.push(e) });

    const waiting = c.waitForSettled('p-ro', { timeoutMs: 5_000 });
    await expect.poll(() => refused.length).toBe(1);
    release();
    expect((await waiting).status).toBe('CAPTURED');
    expect(subs.subscriptions).toHaveLength(1);
    expect(refused[0]).toBeInstanceOf(AuthError);
    expect(refused[0]).toMatchObject({ code });
    // Polling alone, at once: no backoff between reads, no read the refusal woke.
    expect(clock.sleeps).toEqual([1_000, 1_000]);
    expect(transport.requests.map((r) => r.variables)).toEqual([{ id: 'p-ro' }, { id: 'p-ro' }, { id: 'p-ro' }]);

    // A later watch does not subscribe at all, and nothing is said again.
    expect((await c.waitForSettled('p-ro2', { timeoutMs: 5_000 })).status).toBe('CAPTURED');
    expect(subs.subscriptions).toHaveLength(1);
    expect(refused).toHaveLength(1);
  });

  test.each<[string, unknown]>([
    ['TOO_MANY_SUBSCRIPTIONS', refusal('TOO_MANY_SUBSCRIPTIONS')],
    ['a 503 over SSE', httpError(503)],
    ['a WebSocket closed with 1013 (Try Again Later)', { code: 1013, reason: 'too many sockets for this token' }],
    // The server closes so also when it could not check the token; the next try goes over SSE.
    ['a WebSocket closed with 4403', { code: 4403, reason: 'Forbidden' }],
    ['the network', new TypeError('fetch failed')],
  ])('%s: subscribed again with backoff, nothing said', async (_name, failure) => {
    const processing = payment({ id: 'p-busy', status: 'PROCESSING', capturedAmount: '0.00' });
    const subs = scriptedSubscriber([{ throws: failure }, { throws: failure }]);
    const refused: AuthError[] = [];
    const clock = turningClock();
    const reads: Transport = async () => ok({ payment: processing });
    const c = client(memoryStorage(), reads, { subscriber: subs.subscriber, clock, random: () => 0.5, pollIntervalMs: 60_000, onEventsRefused: (e) => refused.push(e) });
    const stop = new AbortController();
    const waiting = c.waitForSettled('p-busy', { signal: stop.signal }).catch((e: unknown) => e);
    // Two failures, then a third subscription that stays open.
    await expect.poll(() => subs.subscriptions.length).toBe(3);
    stop.abort(new Error('test over'));
    expect(await waiting).toBeInstanceOf(AbortedError);
    expect(refused).toEqual([]);
    // The backoff between the tries: 250 ms, then 500 ms, each drawn at half (random 0.5).
    expect(clock.sleeps.filter((ms) => ms !== 60_000)).toEqual([125, 250]);
  });
});
