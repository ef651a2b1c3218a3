// Where a key could be lost or outlived, against the real server: an
// operation resumed while the server holds its key and after it forgot it,
// an answer that says nothing about the operation after one that was lost,
// two customers' equal payments in one Node.js process, and a settled
// operation that storage failed to remove.
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import {
  AuthError,
  CMPayClient,
  CMPayError,
  ExpiredOperationError,
  StateConflictError,
  fileStorage,
  memoryStorage,
  type CMPayClientOptions,
  type PendingStorage,
} from '../../dist/index.js';
import { paymentsOf } from './check.js';
import { startServer, type RunningServer } from './server.js';

const run = `keys-${Date.now()}`;
let n = 0;
const input = (over = {}) => ({ clientId: `${run}-${++n}`, amount: '10.00', currency: 'BRL', method: 'CREDIT_CARD' as const, ...over });
const noEvents = async function* () {};

function client(opts: Partial<CMPayClientOptions> = {}) {
  return new CMPayClient({
    url: inject('graphqlUrl'),
    token: inject('token'),
    storage: memoryStorage(),
    subscriber: noEvents,
    retry: { baseDelayMs: 1, maxAttempts: 3 },
    ...opts,
  });
}

// A fetch whose first n requests reach the server but whose answers are lost.
function losingFirst(count: number, then: typeof fetch = fetch): typeof fetch & { calls: number } {
  const f = (async (url: RequestInfo | URL, init?: RequestInit) => {
    f.calls++;
    if (f.calls <= count) {
      await fetch(url, init);
      throw new TypeError('network error: the answer was lost');
    }
    return then(url, init);
  }) as typeof fetch & { calls: number };
  f.calls = 0;
  return f;
}

describe("after the server's IDEMPOTENCY_KEY_TTL", () => {
  const ttlMs = 2_000;
  let server: RunningServer;
  let url: string;
  const token = `keys-ttl-${process.pid}`;

  beforeAll(async () => {
    server = await startServer(inject('serverBin'), mkdtempSync(join(inject('workDir'), 'ttl-')), token, { IDEMPOTENCY_KEY_TTL: `${ttlMs}ms` });
    url = `http://${server.addr}/graphql`;
  });
  afterAll(() => server?.stop());

  // What the short-TTL server holds for a client, read by plain fetch.
  async function madeFor(clientId: string) {
    const res = await fetch(url, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        query: 'query($c: ID!) { payments(filter: { clientId: $c }) { edges { node { id idempotencyKey refunds { idempotencyKey } } } } }',
        variables: { c: clientId },
      }),
    });
    const body = (await res.json()) as { data: { payments: { edges: Array<{ node: { id: string; idempotencyKey: string; refunds: Array<{ idempotencyKey: string }> } }> } } };
    return body.data.payments.edges.map((e) => e.node);
  }

  const page = (storage: PendingStorage, opts: Partial<CMPayClientOptions> = {}) =>
    new CMPayClient({ url, token, storage, subscriber: noEvents, retry: { baseDelayMs: 1, maxAttempts: 2 }, ...opts });

  test('what was made under a stored key is found, not made again; only a create nobody made is made', async () => {
    // 1. A create whose every answer was lost, and 2. the same written as
    // the server reads it but not as it answers it: a client id typed
    // decomposed (the server keeps NFC), an amount with a sign and an exponent.
    const lostKnown = { storage: memoryStorage(), input: input() };
    await page(lostKnown.storage, { fetch: losingFirst(2) }).createPayment(lostKnown.input).catch(() => undefined);
    const lost = { storage: memoryStorage(), input: input({ clientId: `${run}-cafe\u0301-${++n}`, amount: '+1.05e1' }) };
    await page(lost.storage, { fetch: losingFirst(2) }).createPayment(lost.input).catch(() => undefined);
    // 3. A create with a NUL in its client id: no payment can have one.
    const nul = { storage: memoryStorage(), input: input({ clientId: `${run}-nul\u0000-${++n}` }) };
    await page(nul.storage, { fetch: losingFirst(2) }).createPayment(nul.input).catch(() => undefined);
    // 4. A create that never reached the server.
    const never = { storage: memoryStorage(), input: input() };
    await page(never.storage, { fetch: () => Promise.reject(new TypeError('offline')) }).createPayment(never.input).catch(() => undefined);
    // 5. A refund whose answer was lost, and 6. one that never reached the server.
    const refunds = { storage: memoryStorage(), input: input() };
    const paid = await page(memoryStorage()).createPayment(refunds.input);
    await page(refunds.storage, { fetch: losingFirst(2) }).refundPayment({ paymentId: paid.payment.id, amount: '1' }).catch(() => undefined);
    await page(refunds.storage, { fetch: () => Promise.reject(new TypeError('offline')) })
      .refundPayment({ paymentId: paid.payment.id, amount: '2' })
      .catch(() => undefined);
    for (const s of [lost, lostKnown, never, nul]) expect(s.storage.load()).toHaveLength(1);
    const keyOf = new Map([lost, lostKnown, never].map((s) => [s, s.storage.load()[0].idempotencyKey]));
    expect(refunds.storage.load()).toHaveLength(2);

    // The payer comes back once the server has forgotten every key.
    const since = Date.now();
    await expect.poll(() => Date.now() - since, { timeout: ttlMs * 3, interval: 100 }).toBeGreaterThan(ttlMs + 500);

    const ttl = { idempotencyKeyTTL: `${ttlMs}ms` };
    const [a] = await page(lost.storage, ttl).resumePending();
    expect(a.error).toBeUndefined();
    expect(a).toMatchObject({ settled: true, result: { replayed: true, payment: { amount: '10.50' } } });
    const [b] = await page(lostKnown.storage, ttl).resumePending();
    expect(b).toMatchObject({ settled: true, result: { replayed: true } });
    const [z] = await page(nul.storage, ttl).resumePending();
    expect(z).toMatchObject({ settled: true, error: { code: 'BAD_USER_INPUT' } });
    expect(nul.storage.load()).toEqual([]);
    const [c] = await page(never.storage, ttl).resumePending();
    expect(c).toMatchObject({ settled: true, result: { replayed: false } });
    const [made, notMade] = await page(refunds.storage, ttl).resumePending();
    expect(made).toMatchObject({ settled: true, result: { replayed: true, refund: { amount: '1.00' } } });
    expect(notMade.error).toBeInstanceOf(ExpiredOperationError);
    expect(notMade).toMatchObject({ settled: true, error: { pending: false } });

    for (const s of [lost, lostKnown, never]) {
      expect((await madeFor(s.input.clientId.normalize('NFC'))).map((p) => p.idempotencyKey)).toEqual([keyOf.get(s)]);
      expect(s.storage.load()).toEqual([]);
    }
    const [refunded] = await madeFor(refunds.input.clientId);
    expect(refunded.refunds).toHaveLength(1);
  });

  test('a shopper who pays again after the first create went stale pays once', async () => {
    const order = input();
    const storage = memoryStorage(); // the tab's IndexedDB
    const opts = { joinByParameters: true, idempotencyKeyTTL: `${ttlMs}ms`, retry: { baseDelayMs: 1, maxAttempts: 1 } };
    let online = false;
    const net = ((u: RequestInfo | URL, init?: RequestInit) => (online ? fetch(u, init) : Promise.reject(new TypeError('offline')))) as typeof fetch;
    const tab = page(storage, { ...opts, fetch: net });
    await tab.createPayment(order).catch(() => undefined); // offline: never reached the server
    const since = Date.now();
    await expect.poll(() => Date.now() - since, { timeout: ttlMs * 3, interval: 100 }).toBeGreaterThan(ttlMs);
    online = true;
    await tab.createPayment(order); // the same order, paid again
    await page(storage, opts).resumePending(); // the next page load
    expect(await madeFor(order.clientId)).toHaveLength(1);
  });

  test("a caller's key another client stored after this one loaded is looked up once stale, not sent blindly", async () => {
    const order = input();
    const shared = memoryStorage(); // a PendingStorage shared by two processes (a table, say)
    const opts = { idempotencyKeyTTL: `${ttlMs}ms`, retry: { baseDelayMs: 1, maxAttempts: 1 } };
    const b = page(shared, opts); // started first
    await b.ready;
    await page(shared, { ...opts, fetch: losingFirst(1) }).createPayment(order, { idempotencyKey: `order-${order.clientId}` }).catch(() => undefined);
    expect(shared.load()).toHaveLength(1);
    const since = Date.now();
    await expect.poll(() => Date.now() - since, { timeout: ttlMs * 3, interval: 100 }).toBeGreaterThan(ttlMs + 500);
    // The order is retried on B with its key.
    const r = await b.createPayment(order, { idempotencyKey: `order-${order.clientId}` });
    expect(r.replayed).toBe(true);
    expect(await madeFor(order.clientId)).toHaveLength(1);
  });

  test("a stale refund under a caller's key the server forgot and reused is not answered with the older refund", async () => {
    const key = `refund-order-${run}-${++n}`;
    const opts = { idempotencyKeyTTL: ttlMs };
    const waitMs = async (ms: number) => {
      const since = Date.now();
      await expect.poll(() => Date.now() - since, { timeout: ms * 3, interval: 50 }).toBeGreaterThan(ms);
    };
    const { payment } = await page(memoryStorage(), opts).createPayment(input());
    // The first refund of the order, under the order's key.
    expect((await page(memoryStorage(), opts).refundPayment({ paymentId: payment.id, amount: '2.00' }, { idempotencyKey: key })).refund.amount).toBe('2.00');
    // Past the server's TTL the key is free again: a second refund of the
    // order is stored under it by a process that crashed before sending it
    // (a try sent would keep it in doubt for longer than this test runs).
    await waitMs(ttlMs + 300);
    const storage = memoryStorage();
    await storage.put({ operation: 'REFUND_PAYMENT', idempotencyKey: key, params: { paymentId: payment.id, amount: '3.00' }, startedAt: new Date().toISOString() });
    // Back online once it is stale: the lookup finds only the older refund, made before it was stored.
    await waitMs(ttlMs);
    const [outcome] = await page(storage, opts).resumePending();
    expect(outcome.result).toBeUndefined();
    expect(outcome.error).toBeInstanceOf(ExpiredOperationError); // told the 3.00 refund was not made
    expect((await madeFor(payment.clientId))[0].refunds).toHaveLength(1);
  });

  test("a stale create under a caller's key the server forgot and reused is not answered with the older payment", async () => {
    const order = input();
    const key = `order-${order.clientId}`;
    const opts = { idempotencyKeyTTL: ttlMs };
    const waitMs = async (ms: number) => {
      const since = Date.now();
      await expect.poll(() => Date.now() - since, { timeout: ms * 3, interval: 50 }).toBeGreaterThan(ms);
    };
    const first = await page(memoryStorage(), opts).createPayment(order, { idempotencyKey: key });
    // Past the server's TTL the key is free again: the next equal order uses it, offline.
    await waitMs(ttlMs + 300);
    const storage = memoryStorage();
    const offline = (() => Promise.reject(new TypeError('offline'))) as typeof fetch;
    const lost = await page(storage, { ...opts, fetch: offline }).createPayment(order, { idempotencyKey: key }).catch((e: unknown) => e);
    expect(lost).toMatchObject({ pending: true });
    // Back online once it is stale: the lookup finds only the older payment, made before it was stored.
    await waitMs(ttlMs);
    const [outcome] = await page(storage, opts).resumePending();
    // The second order was never paid: it is made now, under its key.
    expect(outcome).toMatchObject({ settled: true, result: { replayed: false } });
    expect(outcome.result?.payment.id).not.toBe(first.payment.id);
    expect((await madeFor(order.clientId)).map((p) => p.idempotencyKey)).toEqual([key, key]);
  });

  test('a refund whose try is still on its way when it turns stale is not declared "nothing was done"', async () => {
    const order = input();
    const { payment } = await page(memoryStorage()).createPayment(order);
    const storage = memoryStorage();
    // Stored (by a process that then crashed) just short of nine tenths of the TTL: still fresh.
    const startedAt = new Date(Date.now() - ttlMs * 0.9 + 150).toISOString();
    await storage.put({ operation: 'REFUND_PAYMENT', idempotencyKey: `rf-${order.clientId}`, params: { paymentId: payment.id, amount: '4.00' }, startedAt });
    let arrived: Promise<unknown> | undefined;
    // The first try leaves, but reaches the server 400 ms later (a slow hop); its connection drops before.
    const slowFirst = (async (url: RequestInfo | URL, init?: RequestInit) => {
      if (!arrived) {
        arrived = new Promise((r) => setTimeout(r, 400)).then(() => fetch(url, { ...init, signal: undefined }));
        throw new TypeError('network error: connection reset');
      }
      return fetch(url, init);
    }) as typeof fetch;
    const opts = { fetch: slowFirst, idempotencyKeyTTL: ttlMs, retry: { baseDelayMs: 300, maxDelayMs: 300, maxAttempts: 3 }, random: () => 1 };
    const [outcome] = await page(storage, opts).resumePending();
    await arrived;
    expect((await madeFor(order.clientId))[0].refunds).toHaveLength(1); // the refund was made
    // ...so the client must not have told the caller it was not: it stays stored.
    expect(outcome).toMatchObject({ settled: false, error: { code: 'LOOKUP_INCONCLUSIVE', pending: true } });
    expect(storage.load()).toHaveLength(1);
  });
});

describe('a stored operation whose key the server still holds is sent again, and its answer is the replay', () => {
  // One try, so that the lost answer leaves the operation stored.
  const once = { retry: { baseDelayMs: 1, maxAttempts: 1 } };

  test('a create written otherwise than the server answers it (NFD client id, +10.50, 1.05e1) is replayed', async () => {
    for (const over of [{ clientId: `${run}-cafe\u0301-${++n}` }, { amount: '+10.50' }, { amount: '1.05e1' }]) {
      const storage = memoryStorage();
      const i = input(over);
      const err = await client({ storage, fetch: losingFirst(1), ...once }).createPayment(i).catch((e: unknown) => e);
      expect(err).toMatchObject({ pending: true });
      expect(await paymentsOf(i.clientId.normalize('NFC'))).toHaveLength(1);

      const [resumed] = await client({ storage, ...once }).resumePending();
      expect(resumed.error, JSON.stringify(over)).toBeUndefined();
      expect(resumed).toMatchObject({ settled: true, result: { replayed: true } });
      expect(await paymentsOf(i.clientId.normalize('NFC'))).toHaveLength(1);
    }
  });

  test('a refund of a payment replayed 5,100 times is resumed: no list of its attempts is read', async () => {
    const url = inject('graphqlUrl');
    const headers = { Authorization: `Bearer ${inject('token')}`, 'Content-Type': 'application/json' };
    const i = input();
    const made = await client().createPayment(i, { idempotencyKey: `${run}-many` });
    // 5,100 replays of the create's key, 100 to a request.
    const aliases = Array.from({ length: 100 }, (_, k) =>
      `a${k}: createPayment(input: {clientId: ${JSON.stringify(i.clientId)}, amount: "10.00", currency: "BRL", method: CREDIT_CARD}, idempotencyKey: "${run}-many") { replayed }`,
    ).join('\n');
    for (let k = 0; k < 51; k++) {
      const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ query: `mutation { ${aliases} }` }) });
      const body = (await res.json()) as { errors?: unknown[] };
      expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
    }
    const storage = memoryStorage();
    const err = await client({ storage, fetch: losingFirst(1), ...once }).refundPayment({ paymentId: made.payment.id, amount: '1' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ pending: true });

    const [resumed] = await client({ storage, ...once }).resumePending();
    expect(resumed.error?.code, resumed.error?.message).toBeUndefined();
    expect(resumed).toMatchObject({ settled: true, result: { replayed: true } });
  }, 60_000);

  test('a create with a NUL in its client id settles on the server\'s answer, whatever the payments filter makes of it', async () => {
    const storage = memoryStorage();
    const i = input({ clientId: `${run}-nul\u0000-${++n}` });
    const err = await client({ storage, fetch: losingFirst(1), ...once }).createPayment(i).catch((e: unknown) => e);
    expect(err).toMatchObject({ pending: true });
    const [resumed] = await client({ storage, ...once }).resumePending();
    expect(resumed, `${resumed.error?.code} ${resumed.error?.message}`).toMatchObject({ settled: true });
    expect(storage.load()).toEqual([]);
  });
});

describe('an answer that says nothing about the operation, after a lost one', () => {
  test("a proxy's 403 keeps the key: the operation is pending, and resuming it pays once", async () => {
    const proxy403 = losingFirst(1, async () => new Response('<html>403 Forbidden</html>', { status: 403, headers: { 'Content-Type': 'text/html' } }));
    const storage = memoryStorage();
    const i = input();
    const err = (await client({ storage, fetch: proxy403 }).createPayment(i).catch((e: unknown) => e)) as CMPayError;
    expect(err).toBeInstanceOf(CMPayError);
    expect(err).toMatchObject({ httpStatus: 403, pending: true });
    expect(storage.load().map((o) => o.idempotencyKey)).toEqual([err.idempotencyKey]);

    const [resumed] = await client({ storage }).resumePending();
    expect(resumed).toMatchObject({ settled: true, result: { replayed: true } });
    expect((await paymentsOf(i.clientId)).map((p) => p.idempotencyKey)).toEqual([err.idempotencyKey]);
  });

  test("the server's 401 (a token revoked meanwhile) keeps the key for a resume with a new token", async () => {
    // The first try commits and its answer is lost; the next ones carry a token the server refuses.
    const revoked = losingFirst(1, (url, init) =>
      fetch(url, { ...init, headers: { ...(init?.headers as Record<string, string>), Authorization: 'Bearer revoked-meanwhile' } }),
    );
    const storage = memoryStorage();
    const i = input();
    const err = await client({ storage, fetch: revoked }).createPayment(i).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthError);
    expect(err).toMatchObject({ code: 'UNAUTHENTICATED', httpStatus: 401, pending: true });
    expect(storage.load()).toHaveLength(1);

    const [resumed] = await client({ storage }).resumePending();
    expect(resumed).toMatchObject({ settled: true, result: { replayed: true } });
    expect(await paymentsOf(i.clientId)).toHaveLength(1);
  });

  test('a 401 to a first try leaves nothing stored and nothing made', async () => {
    const storage = memoryStorage();
    const i = input();
    const err = await client({ storage, token: 'wrong' }).createPayment(i).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'UNAUTHENTICATED', pending: false });
    expect(storage.load()).toEqual([]);
    expect(await paymentsOf(i.clientId)).toEqual([]);
  });
});

describe('equal payments made at once', () => {
  test("in a Node.js backend (file storage) two customers' equal payments are two payments", async () => {
    const c = client({ storage: fileStorage(join(mkdtempSync(join(inject('workDir'), 'two-')), 'p.json')) });
    const order = input({ method: 'PIX' as const });
    const [alice, bob] = await Promise.all([c.createPayment(order), c.createPayment(order)]);
    expect(alice.payment.id).not.toBe(bob.payment.id);
    expect([alice.replayed, bob.replayed]).toEqual([false, false]);
    expect(await paymentsOf(order.clientId)).toHaveLength(2);
  });

  test("joining by parameters (one shopper's double click) makes one payment, and the second call says replayed", async () => {
    const c = client({ joinByParameters: true });
    const order = input();
    const [first, second] = await Promise.all([c.createPayment(order), c.createPayment(order)]);
    expect(second.payment.id).toBe(first.payment.id);
    expect([first.replayed, second.replayed]).toEqual([false, true]);
    expect(await paymentsOf(order.clientId)).toHaveLength(1);
  });

  test('a keyless checkout whose answer was lost, reloaded, resumed and paid again pays once', async () => {
    const storage = memoryStorage(); // the tab's IndexedDB
    const order = input();
    // The server makes the payment; the page never hears of it, and reloads.
    await client({ storage, joinByParameters: true, fetch: losingFirst(3) }).createPayment(order).catch(() => undefined);
    const page = client({ storage, joinByParameters: true });
    const [resumed] = await page.resumePending();
    expect(resumed).toMatchObject({ settled: true, result: { replayed: true } });
    // The page shows its form again, and the shopper pays the same cart.
    const again = await page.createPayment(order);
    expect(again).toMatchObject({ replayed: true, payment: { id: resumed.result?.payment.id } });
    expect(await paymentsOf(order.clientId)).toHaveLength(1);
  });
});

test('a settled payment that storage failed to remove is never answered to the next equal call', async () => {
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
  const c = client({ storage });
  const order = input();
  const first = await c.createPayment(order);
  const second = await c.createPayment(order);
  expect(second.payment.id).not.toBe(first.payment.id);
  expect(second.replayed).toBe(false);
  expect(await paymentsOf(order.clientId)).toHaveLength(2);
});

describe('a refusal that leaves the key unused, whose removal from storage failed', () => {
  // One browser profile's IndexedDB whose next removal fails (over its quota).
  const failingRemove = () => {
    const mem = memoryStorage();
    const storage = { ...mem, singleUser: true, failNext: false } as PendingStorage & { failNext: boolean };
    storage.remove = (k) => {
      if (storage.failNext) {
        storage.failNext = false;
        throw new Error('QuotaExceededError');
      }
      return mem.remove(k);
    };
    return storage;
  };

  test('a refund refused before capture is not sent by the next page: one refund is made', async () => {
    const storage = failingRemove();
    const first = client({ storage, joinByParameters: true });
    const { payment } = await first.createPayment(input({ capture: false }));
    expect(payment.status).toBe('AUTHORIZED');
    storage.failNext = true;
    const refused = await first.refundPayment({ paymentId: payment.id, amount: '2.00' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(StateConflictError);
    expect(refused).toMatchObject({ pending: false });
    // The caller captures, then refunds the 2.00 the customer is owed.
    await first.capturePayment({ paymentId: payment.id });
    expect((await first.refundPayment({ paymentId: payment.id, amount: '2.00' })).refund.status).toBe('SUCCEEDED');
    // The next page load resumes what storage holds: nothing to send.
    expect(await client({ storage, joinByParameters: true }).resumePending()).toEqual([]);
    expect(storage.load()).toEqual([]);
    expect((await client().getPayment(payment.id))!.refunds.map((r) => r.amount)).toEqual(['2.00']);
  });

  test('a 401 to a first try is not sent by the next page with a working token: the shopper who paid again pays once', async () => {
    const storage = failingRemove();
    const order = input();
    storage.failNext = true;
    const err = await client({ storage, token: 'expired-token' }).createPayment(order).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'UNAUTHENTICATED', pending: false });
    // The shopper signs in again and pays (a new page, a working token).
    const signedIn = client({ storage, joinByParameters: true });
    expect(await signedIn.resumePending()).toEqual([]);
    await signedIn.createPayment(order);
    expect(await paymentsOf(order.clientId)).toHaveLength(1);
  });
});

describe('one intended payment, one payment, whatever answers a try', () => {
  const page = (storage: PendingStorage, opts: Partial<CMPayClientOptions> = {}) =>
    client({ storage, joinByParameters: true, retry: { baseDelayMs: 1, maxAttempts: 2 }, ...opts });
  const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
  // A promise and the function that resolves it: one tab's try held until another tab has sent.
  const signal = (): [Promise<void>, () => void] => {
    let fire!: () => void;
    return [new Promise<void>((r) => (fire = r)), fire]; // the executor runs at once: fire is set
  };

  test("a gateway's 504 in GraphQL's shape after it forwarded the request is retried: the replay answers", async () => {
    const order = input();
    let calls = 0;
    const gateway = (async (url: RequestInfo | URL, init?: RequestInit) => {
      if (++calls === 1) {
        await fetch(url, init);
        return json(504, { errors: [{ message: 'upstream request timeout', extensions: { code: 'GATEWAY_TIMEOUT' } }] });
      }
      return fetch(url, init);
    }) as typeof fetch;
    const r = await page(memoryStorage(), { fetch: gateway }).createPayment(order);
    expect(r.replayed).toBe(true);
    expect(await paymentsOf(order.clientId)).toHaveLength(1);
  });

  test("a 401 in one tab after another tab resumed its operation keeps the key: the next click joins it", async () => {
    const order = input();
    const storage = memoryStorage(); // the tabs' shared IndexedDB
    const [gate, release] = signal();
    const [aSent, sentA] = signal();
    // Tab A's token has expired: its one try is answered 401, late.
    const expired = (async () => {
      sentA();
      await gate;
      return json(401, { errors: [{ message: 'token expired', extensions: { code: 'UNAUTHENTICATED' } }] });
    }) as typeof fetch;
    const a = page(storage, { fetch: expired, retry: { baseDelayMs: 1, maxAttempts: 1 } }).createPayment(order).catch((e: unknown) => e);
    await aSent;
    // Tab B resumes A's operation: the server makes the payment; B's answer is lost.
    await page(storage, { fetch: losingFirst(1), retry: { baseDelayMs: 1, maxAttempts: 1 } }).resumePending();
    release();
    expect(await a).toMatchObject({ code: 'UNAUTHENTICATED', pending: true });
    // The shopper logs in again (a new page) and pays: the stored operation answers.
    const c = page(storage);
    expect(await c.createPayment(order)).toMatchObject({ replayed: true });
    expect(await c.resumePending()).toEqual([]);
    expect(await paymentsOf(order.clientId)).toHaveLength(1);
  });

  test("a 401 to the refused tab's own resume of the operation another tab sent keeps the key: one payment", async () => {
    const order = input();
    const storage = memoryStorage(); // the tabs' shared IndexedDB
    const [gate, release] = signal();
    const [aSent, sentA] = signal();
    // Tab A's token has expired (the real server answers 401); its first try is held until tab B has sent.
    let aCalls = 0;
    const aFetch = (async (url: RequestInfo | URL, init?: RequestInit) => {
      if (++aCalls === 1) {
        sentA();
        await gate;
      }
      return fetch(url, init);
    }) as typeof fetch;
    const tabA = page(storage, { token: 'expired-token', fetch: aFetch, joinByParameters: false });
    const a = tabA.createPayment(order).catch((e: unknown) => e);
    await aSent;
    // Tab B resumes A's operation: the server makes the payment; B's answers are lost.
    const [b] = await page(storage, { fetch: losingFirst(2) }).resumePending();
    expect(b.error?.pending).toBe(true);
    expect(await paymentsOf(order.clientId)).toHaveLength(1);
    release();
    expect(await a).toMatchObject({ code: 'UNAUTHENTICATED', pending: true });
    // Tab A resumes (say on the browser's "online" event): 401 again, and the key stays.
    await tabA.resumePending();
    expect(storage.load().map((o) => o.idempotencyKey)).toEqual([b.pending.idempotencyKey]);
    // The shopper signs in again and pays: the stored operation answers.
    const c = page(storage);
    expect(await c.createPayment(order)).toMatchObject({ replayed: true });
    expect(await c.resumePending()).toEqual([]);
    expect(await paymentsOf(order.clientId)).toHaveLength(1);
  });

  test('a put that wrote the key and then failed removes it before saying nothing was sent', async () => {
    const order = input();
    const inner = memoryStorage();
    let failNext = true;
    // Storage whose write committed but whose acknowledgement was lost.
    const storage: PendingStorage = {
      load: () => inner.load(),
      remove: (k) => inner.remove(k),
      put: async (op) => {
        await inner.put(op);
        if (failNext) {
          failNext = false;
          throw new Error('commit acknowledgement lost');
        }
      },
    };
    const shop = page(storage);
    expect(await shop.createPayment(order).catch((e: unknown) => e)).toMatchObject({ code: 'STORAGE_FAILED', pending: false });
    await shop.createPayment(order); // told nothing was sent, the shopper clicks Pay again
    await page(storage).resumePending(); // the next start
    expect(await paymentsOf(order.clientId)).toHaveLength(1);
  });

  test("a refund resumed under a token bound to another client (FORBIDDEN) keeps its key", async () => {
    const { execFileSync } = await import('node:child_process');
    const mint = (client: string) =>
      execFileSync(inject('serverBin'), ['tokens', 'create', '--name', `keys-${client}`, '--client', client], {
        env: { ...process.env, DATABASE_URL: `sqlite:${join(inject('workDir'), 'cmpay.db')}`, API_TOKENS: inject('token'), ADMIN_PASSWORD: 'not-used-by-these-tests' },
      })
        .toString()
        .trim()
        .split('\n')
        .pop()!;
    const order = input();
    const tokenX = mint(order.clientId);
    const tokenY = mint(`${order.clientId}-other`);
    const storage = memoryStorage(); // one browser profile's IndexedDB, staff switching merchants
    const paid = await page(storage, { token: tokenX }).createPayment(order);
    await page(storage, { token: tokenX, fetch: losingFirst(1), retry: { baseDelayMs: 1, maxAttempts: 1 } })
      .refundPayment({ paymentId: paid.payment.id, amount: '4.00' })
      .catch(() => undefined);
    expect(storage.load()).toMatchObject([{ operation: 'REFUND_PAYMENT' }]);
    // The page reloads signed in as merchant Y: its resume sends X's refund.
    const [outcome] = await page(storage, { token: tokenY }).resumePending();
    expect(outcome).toMatchObject({ settled: false, error: { code: 'FORBIDDEN', pending: true } });
    expect(storage.load()).toHaveLength(1);
  });
});
