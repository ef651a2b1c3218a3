// What the tests read from the server to check a run: by plain fetch, not
// through the client under test.
import { inject } from 'vitest';
import type { PendingOperation } from '../../dist/index.js';

/** A payment as the checks read it. */
export interface CheckedPayment {
  id: string;
  clientId: string;
  idempotencyKey: string;
  status: string;
  refunds: Array<{ id: string; idempotencyKey: string; amount: string }>;
}

/** gql posts a GraphQL request with the test token and returns data, failing on any error. */
export async function gql<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const res = await fetch(inject('graphqlUrl'), {
    method: 'POST',
    headers: { Authorization: `Bearer ${inject('token')}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as { data?: T; errors?: unknown[] };
  if (body.errors?.length || !body.data) throw new Error(`server answered ${res.status}: ${JSON.stringify(body)}`);
  return body.data;
}

/** paymentsOf lists every payment of a client (the tests give each intended payment its own client). */
export async function paymentsOf(clientId: string): Promise<CheckedPayment[]> {
  const data = await gql<{ payments: { edges: Array<{ node: CheckedPayment }> } }>(
    `query($c: ID!) { payments(filter: { clientId: $c }, first: 100) {
       edges { node { id clientId idempotencyKey status refunds { id idempotencyKey amount } } } } }`,
    { c: clientId },
  );
  return data.payments.edges.map((e) => e.node);
}

/**
 * checkExactlyOnce asserts, against the server, that each intended payment
 * (one client id each) was made exactly once if its create's key was ever
 * stored, with that key, and not at all otherwise; and that each refund key
 * stored made exactly one refund, and nothing else made any. stored is every
 * operation the clients stored during the run (their onStored records, and
 * their storage as found after each kill). It returns the problems found,
 * empty when the run was right.
 */
export async function checkExactlyOnce(clientIds: string[], stored: PendingOperation[]): Promise<string[]> {
  const createKeys = new Map<string, Set<string>>();
  const refundKeys = new Map<string, Set<string>>();
  for (const op of stored) {
    const [map, by] = op.operation === 'CREATE_PAYMENT' ? [createKeys, String(op.params.clientId)] : [refundKeys, op.operation === 'REFUND_PAYMENT' ? op.params.paymentId : ''];
    if (!map.has(by)) map.set(by, new Set());
    map.get(by)!.add(op.idempotencyKey);
  }
  const problems: string[] = [];
  for (const clientId of clientIds) {
    const keys = [...(createKeys.get(clientId) ?? [])];
    if (keys.length > 1) problems.push(`${clientId}: ${keys.length} keys stored for one intended payment: ${keys.join(', ')}`);
    const found = await paymentsOf(clientId);
    if (found.length !== keys.length) {
      problems.push(`${clientId}: ${found.length} payments, want ${keys.length} (keys stored: ${keys.join(', ') || 'none'})`);
      continue;
    }
    for (const p of found) {
      if (!keys.includes(p.idempotencyKey)) problems.push(`${clientId}: paid with key ${p.idempotencyKey}, never stored`);
      const want = [...(refundKeys.get(p.id) ?? [])].sort();
      const got = p.refunds.map((r) => r.idempotencyKey).sort();
      if (want.length > 1) problems.push(`${clientId}: ${want.length} keys stored for one intended refund`);
      if (JSON.stringify(got) !== JSON.stringify(want)) {
        problems.push(`${clientId}: refunds with keys ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
      }
    }
  }
  return problems;
}
