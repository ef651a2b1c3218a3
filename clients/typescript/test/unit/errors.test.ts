import { describe, expect, test } from 'vitest';
import {
  AmountExceedsAvailableError,
  AuthError,
  BadUserInputError,
  CMPayClient,
  CMPayError,
  DeclinedError,
  KeyReusedError,
  NotFoundError,
  ProcessorRefusedError,
  RefundFailedError,
  StateConflictError,
  memoryStorage,
} from '../../src/index.js';
import { fakeClock, gqlError, ok, payment, scriptedTransport, type Step } from './fakes.js';

function client(steps: Step[]) {
  const storage = memoryStorage();
  const c = new CMPayClient({ url: 'http://x/graphql', token: 't', storage, transport: scriptedTransport(steps), clock: fakeClock() });
  return { c, storage };
}

const input = { clientId: 'c1', amount: '10.50', currency: 'BRL', method: 'CREDIT_CARD' as const };

describe('errors from the server are typed values', () => {
  test('IDEMPOTENCY_KEY_REUSED: KeyReusedError with differingFields and paymentId', async () => {
    const { c } = client([gqlError('createPayment', 'IDEMPOTENCY_KEY_REUSED', { differingFields: ['amount', 'currency'], paymentId: 'p9' })]);
    const err = await c.createPayment(input, { idempotencyKey: 'k1' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KeyReusedError);
    expect(err).toBeInstanceOf(CMPayError);
    expect(err).toMatchObject({ differingFields: ['amount', 'currency'], paymentId: 'p9', idempotencyKey: 'k1', local: false, retryable: false });
  });

  test('PAYMENT_STATE_CONFLICT: StateConflictError with status and pendingOperation', async () => {
    const { c } = client([gqlError('capturePayment', 'PAYMENT_STATE_CONFLICT', { status: 'AUTHORIZED', pendingOperation: 'CANCEL_PAYMENT' })]);
    const err = await c.capturePayment({ paymentId: 'p1' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StateConflictError);
    expect(err).toMatchObject({ status: 'AUTHORIZED', pendingOperation: 'CANCEL_PAYMENT' });
  });

  test('AMOUNT_EXCEEDS_AVAILABLE: AmountExceedsAvailableError with available', async () => {
    const { c } = client([gqlError('refundPayment', 'AMOUNT_EXCEEDS_AVAILABLE', { available: '3.25' })]);
    const err = await c.refundPayment({ paymentId: 'p1', amount: '5' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AmountExceedsAvailableError);
    expect(err).toMatchObject({ available: '3.25' });
  });

  test('BAD_USER_INPUT: BadUserInputError with field and problems', async () => {
    const problems = [{ field: 'amount', message: 'must be greater than zero' }];
    const { c } = client([gqlError('createPayment', 'BAD_USER_INPUT', { field: 'amount', problems })]);
    const err = await c.createPayment({ ...input, amount: '0' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadUserInputError);
    expect(err).toMatchObject({ field: 'amount', problems });
  });

  test('NOT_FOUND, UNAUTHENTICATED and FORBIDDEN', async () => {
    const nf = client([gqlError('cancelPayment', 'NOT_FOUND')]);
    await expect(nf.c.cancelPayment({ paymentId: 'nope' })).rejects.toBeInstanceOf(NotFoundError);
    const un = client([gqlError('cancelPayment', 'UNAUTHENTICATED', {}, 401)]);
    await expect(un.c.cancelPayment({ paymentId: 'p' })).rejects.toMatchObject({ code: 'UNAUTHENTICATED', httpStatus: 401 });
    const fb = client([gqlError('cancelPayment', 'FORBIDDEN', {}, 403)]);
    await expect(fb.c.cancelPayment({ paymentId: 'p' })).rejects.toBeInstanceOf(AuthError);
  });

  test('PROCESSOR_REFUSED (contract v3): ProcessorRefusedError with processorCode, and the key leaves storage', async () => {
    const { c, storage } = client([gqlError('refundPayment', 'PROCESSOR_REFUSED', { processorCode: 'charge_disputed' })]);
    const err = await c.refundPayment({ paymentId: 'p1' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProcessorRefusedError);
    expect(err).toMatchObject({ processorCode: 'charge_disputed', pending: false });
    expect(storage.load()).toEqual([]);
  });

  test('an unknown code is a final CMPayError carrying its extensions', async () => {
    const { c } = client([gqlError('createPayment', 'SOMETHING_NEW', { detail: 42 })]);
    const err = await c.createPayment(input).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CMPayError);
    expect(err).toMatchObject({ code: 'SOMETHING_NEW', extensions: { code: 'SOMETHING_NEW', detail: 42 }, retryable: false });
  });
});

describe('answers that are errors by their status (contract v3)', () => {
  test('a DECLINED payment: DeclinedError with declineCode and the payment; the key leaves storage', async () => {
    const declined = payment({ status: 'DECLINED', declineCode: 'insufficient_funds', capturedAmount: '0.00' });
    const { c, storage } = client([ok({ createPayment: { payment: declined, replayed: false } })]);
    const err = await c.createPayment(input).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DeclinedError);
    expect(err).toMatchObject({ declineCode: 'insufficient_funds', paymentId: declined.id, code: 'PAYMENT_DECLINED', pending: false });
    expect((err as DeclinedError).payment?.status).toBe('DECLINED');
    expect(storage.load()).toEqual([]);
  });

  test('a REST-style PAYMENT_DECLINED error maps to DeclinedError too', async () => {
    const { c } = client([gqlError('createPayment', 'PAYMENT_DECLINED', { declineCode: 'card_declined', paymentId: 'p3' })]);
    await expect(c.createPayment(input)).rejects.toMatchObject({ declineCode: 'card_declined', paymentId: 'p3' });
  });

  test('a FAILED refund: RefundFailedError with failureCode', async () => {
    const refund = { id: 'r1', paymentId: 'p1', amount: '1.00', reason: null, idempotencyKey: 'k', createdAt: 'x', status: 'FAILED', failureCode: 'expired_card' };
    const { c } = client([ok({ refundPayment: { refund, payment: payment(), replayed: false } })]);
    const err = await c.refundPayment({ paymentId: 'p1', amount: '1' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefundFailedError);
    expect(err).toMatchObject({ failureCode: 'expired_card' });
  });

  test('PROCESSING and PENDING are answers, not errors', async () => {
    const { c } = client([
      ok({ createPayment: { payment: payment({ status: 'PROCESSING' }), replayed: false } }),
      ok({ createPayment: { payment: payment({ status: 'PENDING', nextAction: { type: 'PIX_CODE', pixCode: '000201', expiresAt: 'x' } }), replayed: false } }),
    ]);
    const processing = await c.createPayment(input);
    expect(processing).toMatchObject({ settled: false, payment: { status: 'PROCESSING' } });
    const pending = await c.createPayment({ ...input, amount: '11' });
    expect(pending).toMatchObject({ settled: true, payment: { status: 'PENDING', nextAction: { pixCode: '000201' } } });
  });
});
