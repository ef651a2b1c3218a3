import { describe, expect, test } from 'vitest';
import {
  CMPayClient,
  KeyReusedError,
  UnavailableError,
  WaitTimeoutError,
  memoryStorage,
  type PendingStorage,
  type Transport,
} from '../../src/index.js';
import { fakeClock, fakeSubscriber, frozenClock, gqlError, keys, ok, payment, scriptedTransport, type Step } from './fakes.js';

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
    expect(transport.requests[0].variables).toMatchObject({ idempotencyKey: stored.idempotencyKey, input });
    expect(second.pending()).toEqual([]);
    expect(storage.load()).toEqual([]);
  });

  test('the same payment entered again after a reload reuses the stored key, whatever the amount is written as', async () => {
    const storage = memoryStorage();
    await client(storage, scriptedTransport([...down])).createPayment(input).catch(() => undefined);
    const [stored] = storage.load();

    const transport = scriptedTransport([created(stored.idempotencyKey, { replayed: true })]);
    const again = client(storage, transport);
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

  test("a caller's key stored for other parameters is refused before anything is sent", async () => {
    const storage = memoryStorage();
    await client(storage, scriptedTransport([...down])).createPayment(input, { idempotencyKey: 'order-7' }).catch(() => undefined);
    const transport = scriptedTransport([]);
    const err = await client(storage, transport).createPayment({ ...input, amount: '20' }, { idempotencyKey: 'order-7' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KeyReusedError);
    expect(err).toMatchObject({ local: true, differingFields: ['amount'] });
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
    const c = client(storage, transport);
    const resumed = c.resumePending();
    const entered = c.createPayment(input);
    release();
    const [[outcome], r] = await Promise.all([resumed, entered]);
    expect(outcome.result?.payment.id).toBe(r.payment.id);
    expect(transport.requests).toHaveLength(1);
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
  test('two calls with the same parameters at once make one request with one key', async () => {
    const storage = memoryStorage();
    // A storage that takes a while to write, as IndexedDB does.
    const slow = { ...storage, put: async (op: Parameters<typeof storage.put>[0]) => { await new Promise((r) => setTimeout(r, 20)); storage.put(op); } };
    const transport = scriptedTransport([(req) => created(String(req.variables.idempotencyKey))]);
    const c = client(slow, transport);
    const [a, b] = await Promise.all([c.createPayment(input), c.createPayment({ ...input, amount: '10.5' })]);
    expect(transport.requests).toHaveLength(1);
    expect(a.payment.id).toBe(b.payment.id);
    expect(a.idempotencyKey).toBe(b.idempotencyKey);
  });
});
