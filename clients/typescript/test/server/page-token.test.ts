// A checkout page holding a payments:create token, against the real server:
// it pays, a reloaded page gets its payment back (resumePending replays
// the create under its key) and reads it by id, and everything else the
// token is refused, with nothing done; its one subscription to events is
// refused, and waitForSettled polls instead. A create stored so long that only a
// lookup by key could tell whether it was made stays stored: the token may
// not look up by key, and sending it blindly could pay twice.
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import WebSocket from 'ws';
import { AuthError, CMPayClient, memoryStorage, type CMPayClientOptions, type PendingStorage } from '../../dist/index.js';
import { startServer } from './server.js';

const run = `page-${Date.now()}`;
const clientId = `${run}-shop`;
const noEvents = async function* () {};

// A fetch whose first n requests reach the server but whose answers are lost.
function losingFirst(count: number): typeof fetch {
  let calls = 0;
  return (async (url: RequestInfo | URL, init?: RequestInit) => {
    if (++calls <= count) {
      await fetch(url, init);
      throw new TypeError('network error: the answer was lost');
    }
    return fetch(url, init);
  }) as typeof fetch;
}

// A server of its own, with a payments:create token bound to clientId made
// by `cmpay tokens create` on its database before it starts.
async function pageServer(env: Record<string, string> = {}) {
  const dir = mkdtempSync(join(inject('workDir'), 'page-'));
  const out = execFileSync(inject('serverBin'), ['tokens', 'create', '--name', 'checkout page', '--client', clientId, '--scopes', 'payments:create'], {
    env: { ...process.env, DATABASE_URL: `sqlite:${join(dir, 'cmpay.db')}` },
    encoding: 'utf8',
  });
  const pageToken = out.trim().split('\n').pop()!;
  const fullToken = `page-full-${process.pid}`;
  const server = await startServer(inject('serverBin'), dir, fullToken, env);
  const url = `http://${server.addr}/graphql`;
  // What the server holds for clientId, read with the full token.
  const made = async () => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { Authorization: `Bearer ${fullToken}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ query: 'query($c: ID!) { payments(filter: { clientId: $c }) { edges { node { id status refundedAmount } } } }', variables: { c: clientId } }),
    });
    const body = (await res.json()) as { data: { payments: { edges: Array<{ node: { id: string; status: string; refundedAmount: string } }> } } };
    return body.data.payments.edges.map((e) => e.node);
  };
  // The payer pays a Pix (the sandbox's route, with the full token).
  const pay = async (id: string) => {
    const res = await fetch(`http://${server.addr}/sandbox/payments/${id}/pay`, { method: 'POST', headers: { Authorization: `Bearer ${fullToken}` } });
    expect(res.status).toBe(200);
  };
  return { server, url, pageToken, made, pay };
}

describe('a checkout page with a payments:create token', () => {
  let s: Awaited<ReturnType<typeof pageServer>>;
  beforeAll(async () => {
    s = await pageServer({ SANDBOX_METHODS: 'async' }); // a Pix waits for its payer
  });
  afterAll(() => s?.server.stop());
  const page = (storage: PendingStorage, opts: Partial<CMPayClientOptions> = {}) =>
    new CMPayClient({ url: s.url, token: s.pageToken, storage, subscriber: noEvents, retry: { baseDelayMs: 1, maxAttempts: 2 }, ...opts });

  test('pays, gets its payment back after a reload, reads it, and does nothing else', async () => {
    const storage = memoryStorage(); // the tab's IndexedDB
    const order = { clientId, amount: '42.00', currency: 'BRL', method: 'CREDIT_CARD' as const, capture: false };
    await page(storage, { fetch: losingFirst(2) }).createPayment(order).catch(() => undefined);
    expect(storage.load()).toHaveLength(1);

    // The reloaded page.
    const reloaded = page(storage);
    const [resumed] = await reloaded.resumePending();
    expect(resumed.error).toBeUndefined();
    expect(resumed).toMatchObject({ settled: true, result: { replayed: true, payment: { status: 'AUTHORIZED', amount: '42.00' } } });
    const id = resumed.result!.payment.id;
    expect(await reloaded.getPayment(id)).toMatchObject({ id, status: 'AUTHORIZED' });
    const again = await reloaded.createPayment(order, { idempotencyKey: resumed.pending.idempotencyKey });
    expect(again).toMatchObject({ replayed: true, payment: { id } });

    await expect(reloaded.capturePayment({ paymentId: id })).rejects.toBeInstanceOf(AuthError);
    await expect(reloaded.cancelPayment({ paymentId: id })).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(reloaded.refundPayment({ paymentId: id, amount: '1' })).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect(storage.load()).toEqual([]);
    expect(await s.made()).toEqual([{ id, status: 'AUTHORIZED', refundedAmount: '0.00' }]);
  });

  // Subscriptions counted as they leave: graphql-ws's subscribe messages,
  // graphql-sse's requests.
  let subscribes = 0;
  class CountingWebSocket extends WebSocket {
    override send(data: unknown, ...rest: unknown[]) {
      if (typeof data === 'string' && (JSON.parse(data) as { type?: string }).type === 'subscribe') subscribes++;
      (super.send as (...args: unknown[]) => void)(data, ...rest);
    }
  }
  let reads = 0;
  const counting = (async (url: RequestInfo | URL, init?: RequestInit) => {
    const body = typeof init?.body === 'string' ? init.body : '';
    if (body.includes('"operationName":"PaymentEvents"')) subscribes++;
    if (body.includes('"operationName":"Payment"')) reads++;
    return fetch(url, init);
  }) as typeof fetch;

  test.each([
    ['WebSocket', CountingWebSocket],
    ['SSE', false],
  ])('waits for a Pix by polling: its subscription over %s is refused once and not tried again', async (_name, webSocketImpl) => {
    subscribes = 0;
    const refused: AuthError[] = [];
    const c = new CMPayClient({
      url: s.url,
      token: s.pageToken,
      storage: memoryStorage(),
      fetch: counting,
      webSocketImpl,
      pollIntervalMs: 50,
      onEventsRefused: (e) => refused.push(e),
    });
    try {
      const p = await c.createPayment({ clientId, amount: '9.00', currency: 'BRL', method: 'PIX' });
      expect(p.payment.status).toBe('PENDING');
      const settled = c.waitForSettled(p.payment.id, { timeoutMs: 20_000 });
      await expect.poll(() => refused.length, { timeout: 10_000 }).toBe(1);
      expect(refused[0]).toBeInstanceOf(AuthError);
      expect(refused[0]).toMatchObject({ code: 'FORBIDDEN' });
      // Reads go on where a retried subscription would have been sent again.
      const since = reads;
      await expect.poll(() => reads, { timeout: 10_000 }).toBeGreaterThan(since + 3);
      await s.pay(p.payment.id);
      expect(await settled).toMatchObject({ id: p.payment.id, status: 'CAPTURED' });
      expect(subscribes).toBe(1);
    } finally {
      await c.close();
    }
  });
});

describe('a stale create with a payments:create token', () => {
  const ttlMs = 2_000;
  let s: Awaited<ReturnType<typeof pageServer>>;
  beforeAll(async () => {
    s = await pageServer({ IDEMPOTENCY_KEY_TTL: `${ttlMs}ms` });
  });
  afterAll(() => s?.server.stop());

  test('stays stored and unsent: its lookup by key is refused', async () => {
    const storage = memoryStorage();
    const opts = { url: s.url, token: s.pageToken, storage, subscriber: noEvents, retry: { baseDelayMs: 1, maxAttempts: 2 }, idempotencyKeyTTL: `${ttlMs}ms` };
    const order = { clientId, amount: '7.00', currency: 'BRL', method: 'CREDIT_CARD' as const };
    await new CMPayClient({ ...opts, fetch: losingFirst(2) }).createPayment(order).catch(() => undefined);
    expect(await s.made()).toHaveLength(1);

    // The shopper comes back once the server has forgotten the key.
    const since = Date.now();
    await expect.poll(() => Date.now() - since, { timeout: ttlMs * 3, interval: 100 }).toBeGreaterThan(ttlMs + 500);
    const [r] = await new CMPayClient(opts).resumePending();
    expect(r).toMatchObject({ settled: false, error: { code: 'FORBIDDEN', pending: true } });
    expect(storage.load()).toHaveLength(1);
    expect(await s.made()).toHaveLength(1); // not made a second time
  });
});
