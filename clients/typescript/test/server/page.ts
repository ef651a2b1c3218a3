// The browser test's page: a shop page that pays with the built client
// (dist/index.js, bundled by esbuild in the global setup). Its query string
// says where the API is (?api=...&token=...). At load it does what the
// README asks of every page: resumePending(). The test drives it through
// window.app and reads what it needs to check the run from it.
import { CMPayClient, indexedDBStorage, type CreatePaymentInput, type PendingOperation } from '../../dist/index.js';

type Intent =
  | { kind: 'create'; input: CreatePaymentInput }
  | { kind: 'refund'; paymentId: string; amount: string };

const q = new URLSearchParams(location.search);
const client = new CMPayClient({
  url: q.get('api')!,
  token: q.get('token')!,
  storage: indexedDBStorage(),
  // Short waits: the test cuts the network for at most a few hundred ms.
  retry: { baseDelayMs: 20, maxDelayMs: 200, maxAttempts: 12, attemptTimeoutMs: 2_000 },
  // What the test checks the server against: every key stored, recorded
  // before its request leaves. sessionStorage survives the reloads.
  onStored: (op) => sessionStorage.setItem(`stored:${op.idempotencyKey}`, JSON.stringify(op)),
});

let busy = 0;
const track = async <T>(p: Promise<T>): Promise<T> => {
  busy++;
  try {
    return await p;
  } finally {
    busy--;
  }
};

const app = {
  /** The operations stored when the page loaded: what the reload interrupted. */
  pendingAtLoad: [] as PendingOperation[],
  /** Set once the load's resumePending() is done. */
  loaded: false,
  /** Final errors, across reloads: none is expected. */
  errors: (): string[] => JSON.parse(sessionStorage.getItem('errors') ?? '[]') as string[],
  fail(msg: string) {
    sessionStorage.setItem('errors', JSON.stringify([...app.errors(), msg]));
  },
  idle: () => app.loaded && busy === 0,
  pending: () => client.pending(),
  storedOps: (): PendingOperation[] =>
    Object.keys(sessionStorage)
      .filter((k) => k.startsWith('stored:'))
      .map((k) => JSON.parse(sessionStorage.getItem(k)!) as PendingOperation),
  /** Starts an intent and returns at once; the test reloads or cuts the network while it runs. */
  start(intent: Intent) {
    const run =
      intent.kind === 'create'
        ? client.createPayment(intent.input)
        : client.refundPayment({ paymentId: intent.paymentId, amount: intent.amount });
    void track(run).catch((e: Error & { code?: string; pending?: boolean }) => {
      // An operation without an answer stays stored for resume(); anything
      // else is a failure the test reports.
      if (!e.pending) app.fail(`${e.code}: ${e.message}`);
    });
  },
  resume: () => track(client.resumePending()),
  /** Runs an intent to its end and says how long it took, in ms: the test's disruptions fall in that span. */
  async time(intent: Intent): Promise<number> {
    const t0 = performance.now();
    app.start(intent);
    while (busy > 0) await new Promise((r) => setTimeout(r, 1));
    return performance.now() - t0;
  },
};
(window as unknown as { app: typeof app }).app = app;

async function load() {
  await client.ready;
  app.pendingAtLoad = client.pending();
  // The shopper, seeing the payment form again, pays again with the same
  // details: the client must reuse the stored key, not charge twice.
  const again = q.has('reenter')
    ? app.pendingAtLoad.filter((op) => op.operation === 'CREATE_PAYMENT').map((op) => track(client.createPayment(op.params as CreatePaymentInput)).catch(() => undefined))
    : [];
  const outcomes = await track(client.resumePending());
  for (const o of outcomes) if (o.error && !o.error.pending) app.fail(`resume ${o.error.code}: ${o.error.message}`);
  await Promise.all(again);
  app.loaded = true;
}
void load();
