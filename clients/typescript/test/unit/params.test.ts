import { describe, expect, test } from 'vitest';
import type { PendingOperation } from '../../src/index.js';
import { differingFields } from '../../src/params.js';

type Op = Pick<PendingOperation, 'operation' | 'params'>;
const op = (operation: PendingOperation['operation'], params: Record<string, unknown>): Op =>
  ({ operation, params }) as unknown as Op;

// The server's IDEMPOTENCY_KEY_REUSED names (payments/params.go), so that a
// reuse the client finds in its own storage reads as the server's would.
describe('differingFields', () => {
  test('one operation: every parameter whose value differs, by value', () => {
    const a = op('CREATE_PAYMENT', { clientId: 'c1', amount: '10.50', currency: 'BRL', method: 'CREDIT_CARD' });
    expect(differingFields(a, op('CREATE_PAYMENT', { clientId: 'c1', amount: '10.5', currency: 'brl', method: 'CREDIT_CARD' }))).toEqual([]);
    expect(differingFields(a, op('CREATE_PAYMENT', { clientId: 'c1', amount: '11', currency: 'USD', method: 'CREDIT_CARD' }))).toEqual([
      'amount',
      'currency',
    ]);
  });

  test('another operation: the operation, then what both carry with another value', () => {
    const capture = op('CAPTURE_PAYMENT', { paymentId: 'pay_a' });
    expect(differingFields(capture, op('CANCEL_PAYMENT', { paymentId: 'pay_b' }))).toEqual(['operation', 'paymentId']);
    expect(differingFields(capture, op('CANCEL_PAYMENT', { paymentId: 'pay_a' }))).toEqual(['operation']);
    const create = op('CREATE_PAYMENT', { clientId: 'c1', amount: '100.00', currency: 'BRL', method: 'PIX' });
    expect(differingFields(create, op('REFUND_PAYMENT', { paymentId: 'pay_a', amount: '10' }))).toEqual(['operation', 'amount']);
    expect(differingFields(create, op('REFUND_PAYMENT', { paymentId: 'pay_a', amount: '100' }))).toEqual(['operation']);
    // A capture of all of it carries no amount: no difference in amount.
    expect(differingFields(create, op('CAPTURE_PAYMENT', { paymentId: 'pay_a', amount: null }))).toEqual(['operation']);
  });
});
