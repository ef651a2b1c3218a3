// Comparing an operation's parameters as the server does (contract:
// "amounts compared by value; reason exactly"; "brl" and "BRL" one
// currency), so that the same payment entered again after a reload finds
// its stored key, and a caller's key reused for other parameters is caught
// before it leaves.
import type { Operation, PendingOperation } from './types.js';

/** canonicalAmount writes a decimal amount without leading or trailing zeros: "10.50", 10.5 and "010.5" are "10.5". */
export function canonicalAmount(a: unknown): string | null {
  if (a === undefined || a === null) return null;
  const s = String(a).trim();
  const m = /^(\d*)(?:\.(\d*))?$/.exec(s);
  if (!m || (m[1] === '' && !m[2])) return s;
  const int = m[1].replace(/^0+/, '') || '0';
  const frac = (m[2] ?? '').replace(/0+$/, '');
  return frac ? `${int}.${frac}` : int;
}

// The fields of each operation's parameters, by their differingFields names,
// each with how it is compared.
type Canon = (v: unknown) => unknown;
const same: Canon = (v) => (v === undefined ? null : v);
const upper: Canon = (v) => (typeof v === 'string' ? v.trim().toUpperCase() : same(v));
const id: Canon = (v) => (v === undefined || v === null ? null : String(v));
const capture: Canon = (v) => (v === undefined || v === null ? true : v);

const fields: Record<Operation, Record<string, Canon>> = {
  CREATE_PAYMENT: {
    clientId: id,
    amount: canonicalAmount,
    currency: upper,
    method: same,
    capture,
    paymentMethodToken: same,
  },
  CAPTURE_PAYMENT: { paymentId: id, amount: canonicalAmount },
  CANCEL_PAYMENT: { paymentId: id },
  REFUND_PAYMENT: { paymentId: id, amount: canonicalAmount, reason: same },
};

/**
 * differingFields lists the parameters by which b differs from a, named as
 * the server's IDEMPOTENCY_KEY_REUSED names them; ["operation"] for another
 * operation, [] for the same request.
 */
export function differingFields(
  a: Pick<PendingOperation, 'operation' | 'params'>,
  b: Pick<PendingOperation, 'operation' | 'params'>,
): string[] {
  if (a.operation !== b.operation) return ['operation'];
  const pa = a.params as unknown as Record<string, unknown>;
  const pb = b.params as unknown as Record<string, unknown>;
  const out: string[] = [];
  for (const [name, canon] of Object.entries(fields[a.operation])) {
    if (JSON.stringify(canon(pa[name])) !== JSON.stringify(canon(pb[name]))) out.push(name);
  }
  // Fields this client does not know (added to the schema later) compare exactly.
  for (const name of new Set([...Object.keys(pa), ...Object.keys(pb)])) {
    if (name in fields[a.operation]) continue;
    if (JSON.stringify(pa[name] ?? null) !== JSON.stringify(pb[name] ?? null)) out.push(name);
  }
  return out;
}
