// CMPayClient: the half of "a client that retries never pays twice" that
// runs on the caller's side. Every operation's key is stored before its
// request leaves and removed only once it has a final answer; retries and
// resumePending() send the stored key again, never a new one.
import { anySignal, newIdempotencyKey, realClock, type Clock } from './clock.js';
import {
  AbortedError,
  CMPayError,
  DeclinedError,
  KeyReusedError,
  NotFoundError,
  RefundFailedError,
  StorageError,
  UnavailableError,
  WaitTimeoutError,
} from './errors.js';
import { defaultSubscriber, type DefaultSubscriber, type Subscriber } from './events.js';
import {
  CancelPaymentDocument,
  CapturePaymentDocument,
  CreatePaymentDocument,
  PaymentDocument,
  PaymentEventsDocument,
  RefundPaymentDocument,
} from './gql/graphql.js';
import { differingFields } from './params.js';
import { backoffDelay, judge, retryPolicy, type RetryOptions, type RetryPolicy, type Verdict } from './retry.js';
import { indexedDBStorage, type PendingStorage } from './storage.js';
import { fetchTransport, type GraphQLRequest, type Transport } from './transport.js';
import {
  isSettled,
  type CallOptions,
  type CancelPaymentParams,
  type CancelPaymentResult,
  type CapturePaymentParams,
  type CapturePaymentResult,
  type CreatePaymentInput,
  type CreatePaymentResult,
  type Operation,
  type OperationParams,
  type Payment,
  type PaymentResult,
  type PendingOperation,
  type Refund,
  type RefundPaymentParams,
  type RefundPaymentResult,
} from './types.js';

/** Options of CMPayClient. */
export interface CMPayClientOptions {
  /** The GraphQL endpoint, e.g. "https://pay.example.com/graphql". */
  url: string;
  /** An API token: sent as `Authorization: Bearer <token>`. */
  token: string;
  /**
   * Where keys are kept until their operation has a final answer. Default:
   * indexedDBStorage() in browsers. Elsewhere there is no default: pass
   * fileStorage(path), your own PendingStorage, or memoryStorage() to give up
   * surviving a restart knowingly.
   */
  storage?: PendingStorage;
  /** How requests are retried. */
  retry?: RetryOptions;
  /** The fetch to use; default globalThis.fetch. */
  fetch?: typeof fetch;
  /** A WebSocket class for subscriptions (Node.js 20 has none: pass the `ws` package's); without one, or with false, SSE is used. */
  webSocketImpl?: unknown;
  /** How often waitForSettled reads the payment when no event comes; default 5 s. */
  pollIntervalMs?: number;
  /** Called once an operation's key is durably stored, before its request leaves. */
  onStored?: (op: PendingOperation) => void;
  /** Called once an operation has its final answer and left storage. */
  onSettled?: (op: PendingOperation) => void;
  /** Replaces the HTTP transport (tests). */
  transport?: Transport;
  /** Replaces the subscription transport (tests). */
  subscriber?: Subscriber;
  /** Replaces the clock (tests). */
  clock?: Clock;
  /** Replaces Math.random in the backoff's jitter (tests). */
  random?: () => number;
  /** Replaces the key generator (tests). */
  newKey?: () => string;
}

/** What resumePending() did with one stored operation. */
export interface ResumedOperation {
  /** The operation as it was stored. */
  pending: PendingOperation;
  /** The answer, when one came. */
  result?: PaymentResult;
  /** The error, when the operation failed or could not be sent. */
  error?: CMPayError;
  /** True when the operation has its final answer (success or final error) and left storage. */
  settled: boolean;
}

/** Options of waitForSettled. */
export interface WaitOptions {
  /** Give up after this long with WaitTimeoutError; default 120 s. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

const documents = {
  CREATE_PAYMENT: { doc: CreatePaymentDocument, name: 'CreatePayment', field: 'createPayment' },
  CAPTURE_PAYMENT: { doc: CapturePaymentDocument, name: 'CapturePayment', field: 'capturePayment' },
  CANCEL_PAYMENT: { doc: CancelPaymentDocument, name: 'CancelPayment', field: 'cancelPayment' },
  REFUND_PAYMENT: { doc: RefundPaymentDocument, name: 'RefundPayment', field: 'refundPayment' },
} as const;

function requestFor(op: PendingOperation): GraphQLRequest {
  const d = documents[op.operation];
  const variables: Record<string, unknown> =
    op.operation === 'CREATE_PAYMENT'
      ? { input: op.params, idempotencyKey: op.idempotencyKey }
      : { ...op.params, idempotencyKey: op.idempotencyKey };
  return { query: d.doc.toString(), operationName: d.name, variables };
}

/**
 * A CMPay client that never loses its idempotency key. Make one per page or
 * process and call resumePending() at start; every other method may be
 * called at once (each waits for `ready`).
 */
export class CMPayClient {
  /** Resolves once stored operations are loaded (at once for memory and file storage). */
  readonly ready: Promise<void>;

  readonly #storage: PendingStorage;
  readonly #transport: Transport;
  readonly #policy: RetryPolicy;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #newKey: () => string;
  readonly #pollIntervalMs: number;
  readonly #subscriber: Subscriber;
  readonly #ownSubscriber?: DefaultSubscriber;
  readonly #onStored?: (op: PendingOperation) => void;
  readonly #onSettled?: (op: PendingOperation) => void;

  // What this client knows of storage: loaded at start, then kept in step
  // with every put and remove it makes.
  #known = new Map<string, PendingOperation>();
  #loaded = false;
  // One request loop per key at a time: a resume and a call for the same
  // operation share it.
  #inflight = new Map<string, Promise<PaymentResult>>();
  // Operations whose put has not resolved yet, and that put: a second call
  // with the same parameters waits for it instead of minting another key.
  #starting = new Map<string, PendingOperation>();
  #storing = new Map<string, Promise<void>>();
  #resuming?: Promise<ResumedOperation[]>;

  constructor(opts: CMPayClientOptions) {
    if (!opts.url || !opts.token) throw new TypeError('CMPayClient needs url and token');
    let storage = opts.storage;
    if (!storage) {
      if (typeof indexedDB === 'undefined') {
        throw new TypeError(
          'CMPayClient needs storage here (no IndexedDB): pass fileStorage(path), your own PendingStorage, or memoryStorage()',
        );
      }
      storage = indexedDBStorage();
    }
    this.#storage = storage;
    this.#transport = opts.transport ?? fetchTransport(opts.url, opts.token, opts.fetch);
    this.#policy = retryPolicy(opts.retry);
    this.#clock = opts.clock ?? realClock;
    this.#random = opts.random ?? Math.random;
    this.#newKey = opts.newKey ?? newIdempotencyKey;
    this.#pollIntervalMs = opts.pollIntervalMs ?? 5_000;
    this.#onStored = opts.onStored;
    this.#onSettled = opts.onSettled;
    if (opts.subscriber) {
      this.#subscriber = opts.subscriber;
    } else {
      this.#ownSubscriber = defaultSubscriber({
        url: opts.url,
        token: opts.token,
        webSocketImpl: opts.webSocketImpl,
        fetchFn: opts.fetch,
      });
      this.#subscriber = this.#ownSubscriber.subscribe;
    }

    const loaded = storage.load();
    if (Array.isArray(loaded)) {
      this.#remember(loaded);
      this.ready = Promise.resolve();
    } else {
      this.ready = Promise.resolve(loaded).then((ops) => this.#remember(ops));
      // Every method awaits ready and reports its failure; this keeps an
      // unawaited ready from being an unhandled rejection.
      this.ready.catch(() => undefined);
    }
  }

  #remember(ops: PendingOperation[]) {
    for (const op of ops) this.#known.set(op.idempotencyKey, op);
    this.#loaded = true;
  }

  /**
   * The operations stored and not settled yet, oldest first: those loaded at
   * start and those this client stored since. Throws StorageError before
   * `ready` has resolved (IndexedDB loads asynchronously).
   */
  pending(): PendingOperation[] {
    if (!this.#loaded) {
      throw new StorageError('stored operations are still loading: await client.ready first', { code: 'STORAGE_NOT_READY' });
    }
    return [...this.#known.values()]
      .sort((a, b) => a.startedAt.localeCompare(b.startedAt))
      .map((op) => structuredClone(op));
  }

  /** Creates a payment, exactly once per key however often it is retried or resumed. */
  createPayment(input: CreatePaymentInput, opts: CallOptions = {}): Promise<CreatePaymentResult> {
    return this.#run('CREATE_PAYMENT', input, opts);
  }

  /** Captures an AUTHORIZED payment (all of it when amount is omitted). */
  capturePayment(params: CapturePaymentParams, opts: CallOptions = {}): Promise<CapturePaymentResult> {
    return this.#run('CAPTURE_PAYMENT', params, opts);
  }

  /** Cancels an AUTHORIZED payment. */
  cancelPayment(params: CancelPaymentParams, opts: CallOptions = {}): Promise<CancelPaymentResult> {
    return this.#run('CANCEL_PAYMENT', params, opts);
  }

  /** Refunds a captured payment (all that is left when amount is omitted). */
  refundPayment(params: RefundPaymentParams, opts: CallOptions = {}): Promise<RefundPaymentResult> {
    return this.#run('REFUND_PAYMENT', params, opts) as Promise<RefundPaymentResult>;
  }

  /**
   * Sends every stored operation again, oldest first, each with its own key,
   * and resolves to what became of each. Call it at start: it finishes what
   * a reload, a crash or a lost connection interrupted. Never rejects for an
   * operation's failure: see each outcome's error.
   */
  resumePending(): Promise<ResumedOperation[]> {
    this.#resuming ??= this.#resume().finally(() => {
      this.#resuming = undefined;
    });
    return this.#resuming;
  }

  async #resume(): Promise<ResumedOperation[]> {
    await this.ready;
    const stored = await this.#storage.load();
    for (const op of stored) this.#known.set(op.idempotencyKey, op);
    stored.sort((a, b) => a.startedAt.localeCompare(b.startedAt));
    const out: ResumedOperation[] = [];
    for (const op of stored) {
      try {
        const result = await this.#execute(op);
        out.push({ pending: op, result, settled: result.settled });
      } catch (err) {
        const error = err instanceof CMPayError ? err : new CMPayError(String(err), { code: 'CLIENT_ERROR', cause: err });
        out.push({ pending: op, error, settled: !this.#known.has(op.idempotencyKey) });
      }
    }
    return out;
  }

  async #run<O extends Operation>(operation: O, params: OperationParams[O], opts: CallOptions): Promise<PaymentResult> {
    await this.ready;
    const op = await this.#begin({ operation, params, idempotencyKey: opts.idempotencyKey } as PendingOperation);
    return this.#execute(op, opts.signal);
  }

  // #begin picks the operation's key and stores it: the caller's key; else
  // the key of a stored operation with the same parameters (the same payment
  // entered again after a reload, or a second click while the first is being
  // stored); else a new one. It resolves once the key is durable.
  async #begin(wanted: Omit<PendingOperation, 'startedAt' | 'idempotencyKey'> & { idempotencyKey?: string }) {
    const held = this.#held(wanted);
    if (held) {
      await this.#storing.get(held.idempotencyKey);
      return held;
    }
    const op = {
      operation: wanted.operation,
      params: structuredClone(wanted.params),
      idempotencyKey: wanted.idempotencyKey ?? this.#newKey(),
      startedAt: new Date(this.#clock.now()).toISOString(),
    } as PendingOperation;
    const key = op.idempotencyKey;
    const stored = Promise.resolve()
      .then(() => this.#storage.put(op))
      .then(
        () => {
          this.#known.set(key, op);
          this.#onStored?.(structuredClone(op));
        },
        (err: unknown) => {
          throw new StorageError('could not store the idempotency key; nothing was sent', {
            code: 'STORAGE_FAILED',
            idempotencyKey: key,
            cause: err,
          });
        },
      )
      .finally(() => {
        this.#starting.delete(key);
        this.#storing.delete(key);
      });
    this.#starting.set(key, op);
    this.#storing.set(key, stored);
    await stored;
    return op;
  }

  // #held finds the operation a call must join: the one stored, or being
  // stored, under the caller's key (refusing other parameters under it), or
  // without a caller's key one with the same parameters.
  #held(wanted: Omit<PendingOperation, 'startedAt' | 'idempotencyKey'> & { idempotencyKey?: string }) {
    const all = [...this.#known.values(), ...this.#starting.values()];
    if (wanted.idempotencyKey === undefined) return all.find((op) => differingFields(op, wanted).length === 0);
    const held = all.find((op) => op.idempotencyKey === wanted.idempotencyKey);
    const differ = held ? differingFields(held, wanted) : [];
    if (differ.length > 0) {
      throw new KeyReusedError(
        `idempotency key ${JSON.stringify(wanted.idempotencyKey)} is stored for another ${differ.join(', ')}; nothing was sent`,
        { code: 'IDEMPOTENCY_KEY_REUSED', differingFields: differ, local: true, idempotencyKey: wanted.idempotencyKey },
      );
    }
    return held;
  }

  #execute(op: PendingOperation, signal?: AbortSignal): Promise<PaymentResult> {
    let p = this.#inflight.get(op.idempotencyKey);
    if (!p) {
      p = this.#send(op, signal).finally(() => this.#inflight.delete(op.idempotencyKey));
      this.#inflight.set(op.idempotencyKey, p);
    }
    return p;
  }

  async #send(op: PendingOperation, signal?: AbortSignal): Promise<PaymentResult> {
    const field = documents[op.operation].field;
    let verdict: Answer;
    try {
      verdict = await this.#request(requestFor(op), field, signal);
    } catch (err) {
      if (err instanceof CMPayError) {
        err.idempotencyKey = op.idempotencyKey;
        err.pending = true;
      }
      throw err;
    }
    if (verdict.kind === 'final') {
      verdict.error.idempotencyKey = op.idempotencyKey;
      await this.#settle(op);
      throw verdict.error;
    }
    return this.#answer(op, verdict.data as Record<string, unknown>);
  }

  // #answer reads a payload: PROCESSING and PENDING are answers, not errors;
  // DECLINED and a FAILED refund are final errors.
  async #answer(op: PendingOperation, data: Record<string, unknown>): Promise<PaymentResult> {
    const payment = data.payment as Payment;
    const refund = data.refund as Refund | undefined;
    const base = { code: '', idempotencyKey: op.idempotencyKey };
    if (op.operation === 'CREATE_PAYMENT' && payment.status === 'DECLINED') {
      await this.#settle(op);
      throw new DeclinedError(`the processor declined the payment (${payment.declineCode ?? 'no code'})`, {
        ...base,
        code: 'PAYMENT_DECLINED',
        declineCode: payment.declineCode ?? null,
        payment,
      });
    }
    if (refund?.status === 'FAILED') {
      await this.#settle(op);
      throw new RefundFailedError(`the processor failed the refund (${refund.failureCode ?? 'no code'})`, {
        ...base,
        code: 'REFUND_FAILED',
        refund,
        payment,
      });
    }
    let settled: boolean;
    if (op.operation === 'CREATE_PAYMENT') settled = payment.status !== 'PROCESSING';
    else if (op.operation === 'REFUND_PAYMENT') settled = refund?.status !== 'PROCESSING';
    else settled = !payment.pendingOperation;
    if (settled) await this.#settle(op);
    return { ...(data as object), payment, replayed: data.replayed === true, idempotencyKey: op.idempotencyKey, settled } as PaymentResult;
  }

  // #settle removes an operation that has its final answer. Should storage
  // fail to remove it, it stays: a later resume replays it, which is
  // harmless, so the caller still gets the answer.
  async #settle(op: PendingOperation) {
    try {
      await this.#storage.remove(op.idempotencyKey);
    } catch {
      return;
    }
    this.#known.delete(op.idempotencyKey);
    this.#onSettled?.(structuredClone(op));
  }

  // #request sends req until an answer is final or carries data, waiting
  // between tries as the policy says. It throws UnavailableError when the
  // tries run out and AbortedError when signal fires.
  async #request(req: GraphQLRequest, field: string, signal?: AbortSignal, nullable = false): Promise<Answer> {
    const p = this.#policy;
    let last: CMPayError | undefined;
    let attempt = 0;
    while (attempt < p.maxAttempts) {
      attempt++;
      if (signal?.aborted) throw aborted(signal, last);
      let verdict: Verdict;
      const timeout = new AbortController();
      const timer = setTimeout(() => timeout.abort(new Error('timeout')), p.attemptTimeoutMs);
      try {
        const res = await this.#transport(req, anySignal([signal, timeout.signal]));
        verdict = judge(res, field, this.#clock.now(), nullable);
      } catch (err) {
        if (signal?.aborted) throw aborted(signal, err);
        const timedOut = timeout.signal.aborted;
        verdict = {
          kind: 'retry',
          retryAfterMs: null,
          error: new CMPayError(timedOut ? `no answer within ${p.attemptTimeoutMs} ms` : `network error: ${String(err)}`, {
            code: timedOut ? 'TIMEOUT' : 'NETWORK_ERROR',
            retryable: true,
            cause: err,
          }),
        };
      } finally {
        clearTimeout(timer);
      }
      if (verdict.kind !== 'retry') return verdict;
      last = verdict.error;
      if (attempt >= p.maxAttempts) break;
      const after = verdict.retryAfterMs;
      if (after !== null && after > p.maxRetryAfterMs) break;
      try {
        await this.#clock.sleep(Math.max(after ?? 0, backoffDelay(attempt, p, this.#random)), signal);
      } catch (err) {
        throw aborted(signal, err);
      }
    }
    throw new UnavailableError(`no final answer after ${attempt} tries: ${last?.message ?? 'unknown'}`, {
      code: last?.code ?? 'UNAVAILABLE',
      attempts: attempt,
      httpStatus: last?.httpStatus,
      extensions: last?.extensions,
      cause: last,
    });
  }

  /** The payment with this id, or null when there is none. Retried like the mutations; nothing is stored. */
  async getPayment(id: string, opts: { signal?: AbortSignal } = {}): Promise<Payment | null> {
    const req = { query: PaymentDocument.toString(), operationName: 'Payment', variables: { id } };
    const verdict = await this.#request(req, 'payment', opts.signal, true);
    if (verdict.kind === 'final') throw verdict.error;
    return verdict.data as Payment | null;
  }

  /**
   * Yields the payment as it is now, then again each time it may have
   * changed: on each of its events (WebSocket, or SSE), and every
   * pollIntervalMs in case an event was missed while the subscription was
   * (re)connecting. Stop by breaking out of the loop or with signal.
   */
  async *watchPayment(paymentId: string, opts: { signal?: AbortSignal } = {}): AsyncGenerator<Payment> {
    await this.ready;
    const stop = new AbortController();
    const signal = anySignal([opts.signal, stop.signal]);
    let wake: (() => void) | undefined;
    let dirty = false;
    const poke = () => {
      dirty = true;
      wake?.();
    };
    const followed = this.#follow(paymentId, poke, signal);
    try {
      for (;;) {
        dirty = false;
        const p = await this.getPayment(paymentId, { signal });
        if (!p) throw new NotFoundError(`no payment ${paymentId}`, { code: 'NOT_FOUND' });
        yield p;
        if (!dirty) {
          const woken = new Promise<void>((resolve) => (wake = resolve));
          await Promise.race([woken, this.#clock.sleep(this.#pollIntervalMs, signal).catch(() => undefined)]);
          wake = undefined;
        }
        if (signal.aborted) throw aborted(signal, undefined);
      }
    } finally {
      stop.abort(new Error('watch ended'));
      await followed;
    }
  }

  // #follow keeps a subscription to the payment's events open until signal
  // fires, reconnecting with backoff, and pokes on each event and after each
  // reconnection (an event may have passed while it was down).
  async #follow(paymentId: string, poke: () => void, signal: AbortSignal) {
    const req = { query: PaymentEventsDocument.toString(), operationName: 'PaymentEvents', variables: { paymentId } };
    let failures = 0;
    while (!signal.aborted) {
      const it = this.#subscriber(req);
      const close = () => void it.return?.(undefined);
      signal.addEventListener('abort', close, { once: true });
      try {
        for (;;) {
          const r = await it.next();
          if (r.done) break;
          if (r.value.errors?.length) throw r.value.errors;
          failures = 0;
          poke();
        }
      } catch {
        failures++;
        void it.return?.(undefined);
      } finally {
        signal.removeEventListener('abort', close);
      }
      if (signal.aborted) return;
      poke();
      await this.#clock.sleep(backoffDelay(Math.max(failures, 1), this.#policy, this.#random), signal).catch(() => undefined);
    }
  }

  /**
   * Waits until the payment has nothing in flight: not PROCESSING or PENDING,
   * no capture or cancel waiting for the processor, no refund PROCESSING.
   * Resolves to the payment as it is then, and forgets the stored operations
   * that state settles. Throws WaitTimeoutError after timeoutMs.
   */
  async waitForSettled(paymentId: string, opts: WaitOptions = {}): Promise<Payment> {
    const timeoutMs = opts.timeoutMs ?? 120_000;
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(new Error('timeout')), timeoutMs);
    let last: Payment | undefined;
    try {
      for await (const p of this.watchPayment(paymentId, { signal: anySignal([opts.signal, timeout.signal]) })) {
        last = p;
        if (isSettled(p)) {
          await this.#settleBy(p);
          return p;
        }
      }
    } catch (err) {
      if (timeout.signal.aborted && !opts.signal?.aborted) {
        throw new WaitTimeoutError(`payment ${paymentId} did not settle within ${timeoutMs} ms`, {
          code: 'WAIT_TIMEOUT',
          payment: last,
          cause: err,
        });
      }
      throw err;
    } finally {
      clearTimeout(timer);
    }
    throw new CMPayError('the payment watch ended', { code: 'CLIENT_ERROR' });
  }

  // #settleBy forgets the stored operations a settled payment proves
  // finished: its create (the payment carries the key) and its refunds (each
  // carries its key). A stored capture or cancel is left to resumePending():
  // the payment does not show whether that request ever reached the server.
  async #settleBy(p: Payment) {
    const refundKeys = new Set(p.refunds.map((r) => r.idempotencyKey));
    for (const op of this.#known.values()) {
      const done =
        (op.operation === 'CREATE_PAYMENT' && op.idempotencyKey === p.idempotencyKey && String(op.params.clientId) === p.clientId) ||
        (op.operation === 'REFUND_PAYMENT' && op.params.paymentId === p.id && refundKeys.has(op.idempotencyKey));
      if (done) await this.#settle(op);
    }
  }

  /** Closes the subscription connections this client opened. */
  async close(): Promise<void> {
    await this.#ownSubscriber?.close();
  }
}

/** An answer #request returns: data, or a final error. */
type Answer = Exclude<Verdict, { kind: 'retry' }>;

function aborted(signal: AbortSignal | undefined, cause: unknown): AbortedError {
  return new AbortedError(`aborted: ${String(signal?.reason ?? 'by the caller')}`, { code: 'ABORTED', cause, retryable: true });
}
