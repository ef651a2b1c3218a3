// Comparing an operation's parameters as the server does (contract:
// "amounts compared by value; reason exactly"; "brl" and "BRL" one
// currency), so that the same payment entered again after a reload finds
// its stored key, and a caller's key reused for other parameters is caught
// before it leaves.
import type { Operation, PendingOperation } from './types.js';

/**
 * canonicalAmount writes a decimal amount by its value, reduced, as the
 * server compares amounts: "10.50", 10.5, "010.5", "+10.50" and "1.05e1" are
 * all "10.5". It reads what the server's parser reads (an optional sign,
 * digits with at most one point, an optional exponent); anything else is
 * returned trimmed, as written, and so equals only itself.
 */
export function canonicalAmount(a: unknown): string | null {
  if (a === undefined || a === null) return null;
  const s = String(a).trim();
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(s);
  if (!m || (m[2] === '' && !m[3])) return s;
  const [, sign, int, frac = '', exp = '0'] = m;
  // The value is coefficient × 10^exponent, the coefficient without the
  // zeros that do not change it.
  let digits = (int + frac).replace(/^0+/, '');
  if (digits === '') return '0';
  let exponent = Number(exp) - frac.length;
  const trailing = digits.length - digits.replace(/0+$/, '').length;
  digits = digits.slice(0, digits.length - trailing);
  exponent += trailing;
  const neg = sign === '-' ? '-' : '';
  // Amounts far beyond any currency's range stay in exponent form: equal
  // values still write alike, without building a huge string.
  if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > 64) return `${neg}${digits}e${exponent}`;
  if (exponent >= 0) return `${neg}${digits}${'0'.repeat(exponent)}`;
  const point = digits.length + exponent;
  return point > 0 ? `${neg}${digits.slice(0, point)}.${digits.slice(point)}` : `${neg}0.${'0'.repeat(-point)}${digits}`;
}

/** canonicalClientId is a client id as the server keeps it: in Unicode NFC, so "café" typed decomposed is the same client. */
export function canonicalClientId(v: unknown): string | null {
  return v === undefined || v === null ? null : String(v).normalize('NFC');
}

/** canonicalCurrency is a currency code as the server compares it: "brl" and " BRL" are BRL. */
export function canonicalCurrency(v: unknown): unknown {
  return typeof v === 'string' ? v.trim().toUpperCase() : same(v);
}

// The fields of each operation's parameters, by their differingFields names,
// each with how it is compared.
type Canon = (v: unknown) => unknown;
const same: Canon = (v) => (v === undefined ? null : v);
const id: Canon = (v) => (v === undefined || v === null ? null : String(v));
const capture: Canon = (v) => (v === undefined || v === null ? true : v);

const fields: Record<Operation, Record<string, Canon>> = {
  CREATE_PAYMENT: {
    clientId: canonicalClientId,
    amount: canonicalAmount,
    currency: canonicalCurrency,
    method: same,
    capture,
    paymentMethodToken: same,
  },
  CAPTURE_PAYMENT: { paymentId: id, amount: canonicalAmount },
  CANCEL_PAYMENT: { paymentId: id },
  REFUND_PAYMENT: { paymentId: id, amount: canonicalAmount, reason: same },
};

// The order the server lists differingFields in.
const fieldOrder = ['paymentId', 'amount', 'currency', 'method', 'capture', 'reason', 'paymentMethodToken'];

/**
 * differingFields lists the parameters by which b differs from a, named and
 * ordered as the server's IDEMPOTENCY_KEY_REUSED names them; [] for the same
 * request. For another operation: "operation", then every parameter both
 * carry with another value (a capture of payment A and a cancel of B:
 * operation and paymentId), as the server does.
 */
export function differingFields(
  a: Pick<PendingOperation, 'operation' | 'params'>,
  b: Pick<PendingOperation, 'operation' | 'params'>,
): string[] {
  const pa = a.params as unknown as Record<string, unknown>;
  const pb = b.params as unknown as Record<string, unknown>;
  if (a.operation !== b.operation) {
    const carried = (p: Record<string, unknown>, name: string) => p[name] !== undefined && p[name] !== null;
    return ['operation'].concat(
      fieldOrder.filter((name) => {
        const ca = fields[a.operation][name];
        const cb = fields[b.operation][name];
        return (
          ca !== undefined &&
          cb !== undefined &&
          carried(pa, name) &&
          carried(pb, name) &&
          JSON.stringify(ca(pa[name])) !== JSON.stringify(cb(pb[name]))
        );
      }),
    );
  }
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
