// The client against the real server, in Node: answers, replays and the
// server's errors come out as the typed values the unit tests assume, and
// waitForSettled/watchPayment follow real events over WebSocket and SSE.
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, test } from 'vitest';
import WebSocket from 'ws';
import {
  AmountExceedsAvailableError,
  BadUserInputError,
  CMPayClient,
  DeclinedError,
  KeyReusedError,
  NotFoundError,
  StateConflictError,
  defaultSubscriber,
  fileStorage,
  type CMPayClientOptions,
  type Payment,
} from '../../dist/index.js';

const run = `node-${Date.now()}`;
let n = 0;
const input = (over = {}) => ({ clientId: `${run}-${++n}`, amount: '25.00', currency: 'BRL', method: 'CREDIT_CARD' as const, ...over });

const clients: CMPayClient[] = [];
function client(opts: Partial<CMPayClientOptions> = {}) {
  const dir = mkdtempSync(join(inject('workDir'), 'node-'));
  const c = new CMPayClient({
    url: inject('graphqlUrl'),
    token: inject('token'),
    storage: fileStorage(join(dir, 'pending.json')),
    pollIntervalMs: 60_000, // events, not polling, must wake the watchers here
    ...opts,
  });
  clients.push(c);
  return c;
}
afterAll(() => Promise.all(clients.map((c) => c.close())));

describe('against the real server', () => {
  test('create, replay by key, capture, refund, cancel', async () => {
    const c = client();
    const auth = await c.createPayment(input({ capture: false }), { idempotencyKey: `${run}-a` });
    expect(auth).toMatchObject({ replayed: false, settled: true, payment: { status: 'AUTHORIZED', idempotencyKey: `${run}-a` } });
    const again = await c.createPayment({ ...input({ capture: false }), clientId: auth.payment.clientId, amount: 25 }, { idempotencyKey: `${run}-a` });
    expect(again).toMatchObject({ replayed: true, payment: { id: auth.payment.id } });

    const cap = await c.capturePayment({ paymentId: auth.payment.id, amount: '20' });
    expect(cap.payment).toMatchObject({ status: 'CAPTURED', capturedAmount: '20.00' });
    const ref = await c.refundPayment({ paymentId: auth.payment.id, amount: '5', reason: 'damaged' });
    expect(ref.refund).toMatchObject({ amount: '5.00', reason: 'damaged' });
    expect(ref.payment.status).toBe('PARTIALLY_REFUNDED');

    const other = await c.createPayment(input({ capture: false }));
    expect((await c.cancelPayment({ paymentId: other.payment.id })).payment.status).toBe('CANCELED');
    expect(c.pending()).toEqual([]);
  });

  test("the server's refusals arrive as typed errors with their details", async () => {
    const c = client();
    const p = await c.createPayment(input(), { idempotencyKey: `${run}-b` });

    const reused = await c.createPayment({ ...input(), clientId: p.payment.clientId, amount: '26' }, { idempotencyKey: `${run}-b` }).catch((e: unknown) => e);
    expect(reused).toBeInstanceOf(KeyReusedError);
    expect(reused).toMatchObject({ differingFields: ['amount'], local: false });

    const conflict = await c.capturePayment({ paymentId: p.payment.id }).catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(StateConflictError);
    expect(conflict).toMatchObject({ status: 'CAPTURED' });

    const exceeds = await c.refundPayment({ paymentId: p.payment.id, amount: '30' }).catch((e: unknown) => e);
    expect(exceeds).toBeInstanceOf(AmountExceedsAvailableError);
    expect(exceeds).toMatchObject({ available: '25.00' });

    const bad = await c.createPayment(input({ amount: '1.001' })).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(BadUserInputError);
    expect(bad).toMatchObject({ field: 'amount' });

    await expect(c.cancelPayment({ paymentId: 'no-such-payment' })).rejects.toBeInstanceOf(NotFoundError);
    expect(await c.getPayment('no-such-payment')).toBeNull();
    // Every refusal is final: nothing is left to resume.
    expect(c.pending()).toEqual([]);
  });

  // A WebSocket class whose connections fail at once, as behind a proxy
  // that drops upgrades.
  class RefusedWebSocket extends WebSocket {
    constructor(url: string, protocols?: string | string[]) {
      super(url.replace(/\/graphql$/, '/no-such-path'), protocols);
    }
  }

  // A watcher sees a capture made by someone else, over each transport.
  test.each([
    ['WebSocket', WebSocket, 'websocket'],
    ['SSE', false, 'sse'],
    ['SSE after the WebSocket failed', RefusedWebSocket, 'sse'],
  ])('watchPayment follows events over %s', async (_name, webSocketImpl, transport) => {
    const sub = defaultSubscriber({ url: inject('graphqlUrl'), token: inject('token'), webSocketImpl });
    const watcher = client({ subscriber: sub.subscribe });
    const actor = client();
    const p = await actor.createPayment(input({ capture: false }));
    const seen: Payment[] = [];
    let captured = false;
    for await (const now of watcher.watchPayment(p.payment.id)) {
      seen.push(now);
      if (now.status === 'CAPTURED') break;
      if (!captured) {
        captured = true;
        // Give the subscription a moment to be live; a miss would only
        // delay the test to the 60 s poll, and fail it by timeout.
        setTimeout(() => void actor.capturePayment({ paymentId: p.payment.id }), 300);
      }
    }
    await sub.close();
    // The payment's own PAYMENT_CREATED event may wake the watcher too.
    const statuses = seen.map((s) => s.status);
    expect(statuses[0]).toBe('AUTHORIZED');
    expect(statuses.at(-1)).toBe('CAPTURED');
    expect(new Set(statuses.slice(0, -1))).toEqual(new Set(['AUTHORIZED']));
    expect(sub.transport()).toBe(transport);
  });

  test('a declined card is a DeclinedError with its code, and its key leaves storage', async () => {
    const c = client();
    const err = await c.createPayment(input({ paymentMethodToken: 'pm_card_chargeDeclined' })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DeclinedError);
    expect(err).toMatchObject({ declineCode: 'card_declined' });
    expect(c.pending()).toEqual([]);
  });

  test('a PROCESSING payment stays pending until waitForSettled sees the processor answer', async () => {
    const c = client();
    const slow = await c.createPayment(input({ paymentMethodToken: 'pm_sandbox_slow' }));
    expect(slow).toMatchObject({ settled: false, payment: { status: 'PROCESSING' } });
    expect(c.pending().map((p) => p.idempotencyKey)).toEqual([slow.idempotencyKey]);
    expect((await c.waitForSettled(slow.payment.id, { timeoutMs: 20_000 })).status).toBe('CAPTURED');
    // The settled payment proves its create: the key leaves storage.
    expect(c.pending()).toEqual([]);
  });

  test('waitForSettled on a settled payment answers at once', async () => {
    const c = client();
    const p = await c.createPayment(input());
    expect((await c.waitForSettled(p.payment.id, { timeoutMs: 5_000 })).status).toBe('CAPTURED');
  });
});
