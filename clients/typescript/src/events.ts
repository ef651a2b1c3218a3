// Following a payment's events over the server's subscriptions: WebSocket
// (graphql-transport-ws) where the runtime has a WebSocket, Server-Sent
// Events (graphql-sse, distinct connections mode) otherwise, or once the
// WebSocket could not connect (a proxy that drops upgrades, say).
import { createClient as createWsClient, type Client as WsClient } from 'graphql-ws/client';
import { createClient as createSseClient, type Client as SseClient } from 'graphql-sse';
import type { GraphQLErrorBody } from './errors.js';
import type { GraphQLRequest } from './transport.js';

/** One result of a subscription, as GraphQL sends it. */
export interface SubscriptionResult {
  data?: Record<string, unknown> | null;
  errors?: readonly GraphQLErrorBody[];
}

/**
 * Opens one subscription. The iterator ends, or throws, when the connection
 * ends; its return() closes the subscription. Unit tests pass a fake.
 */
export type Subscriber = (req: GraphQLRequest) => AsyncIterableIterator<SubscriptionResult>;

/** Options of the default subscriber. */
export interface SubscriberOptions {
  /** The GraphQL endpoint (http or https); the WebSocket URL is derived from it. */
  url: string;
  token: string;
  /** A WebSocket class; default globalThis.WebSocket. Node.js 20 has none: pass the `ws` package's, or SSE is used. */
  webSocketImpl?: unknown;
  /** fetch for SSE; default globalThis.fetch. */
  fetchFn?: typeof fetch;
}

/** The default subscriber, and how to close its connections. */
export interface DefaultSubscriber {
  subscribe: Subscriber;
  /** Which transport the next subscription uses. */
  transport(): 'websocket' | 'sse';
  close(): Promise<void>;
}

/**
 * defaultSubscriber subscribes over WebSocket while that works, and over SSE
 * from the first time a WebSocket connection fails (or from the start, when
 * there is no WebSocket).
 */
export function defaultSubscriber(o: SubscriberOptions): DefaultSubscriber {
  const webSocketImpl = o.webSocketImpl ?? (globalThis as { WebSocket?: unknown }).WebSocket;
  let useSse = webSocketImpl === undefined;
  let ws: WsClient | undefined;
  let sse: SseClient | undefined;
  const auth = `Bearer ${o.token}`;

  const wsClient = () =>
    (ws ??= createWsClient({
      url: o.url.replace(/^http/, 'ws'),
      webSocketImpl,
      connectionParams: { Authorization: auth },
      lazy: true,
      retryAttempts: 0,
    }));
  const sseClient = () =>
    (sse ??= createSseClient({
      url: o.url,
      headers: { Authorization: auth },
      retryAttempts: 0,
      fetchFn: o.fetchFn ?? globalThis.fetch.bind(globalThis),
    }));

  // The library's iterators stop a pending next() when return() is called,
  // which a generator wrapped around them would not: return() would wait for
  // the next event. So the WebSocket one is wrapped by hand.
  const subscribe: Subscriber = (req) => {
    if (useSse) return sseClient().iterate(req) as AsyncIterableIterator<SubscriptionResult>;
    const inner = wsClient().iterate(req) as AsyncIterableIterator<SubscriptionResult>;
    const it: AsyncIterableIterator<SubscriptionResult> = {
      next: () =>
        inner.next().catch((err: unknown) => {
          // graphql-ws throws an array of GraphQL errors for the operation, and
          // a CloseEvent, Event or Error when the connection itself failed:
          // only the latter sends later subscriptions to SSE.
          if (!Array.isArray(err)) {
            useSse = true;
            void ws?.dispose();
            ws = undefined;
          }
          throw err;
        }),
      return: (v?: unknown) => inner.return?.(v) ?? Promise.resolve({ done: true, value: undefined }),
      [Symbol.asyncIterator]: () => it,
    };
    return it;
  };

  return {
    subscribe,
    transport: () => (useSse ? 'sse' : 'websocket'),
    close: async () => {
      await ws?.dispose();
      sse?.dispose();
      ws = undefined;
      sse = undefined;
    },
  };
}
