// CMPay's Playground: GraphiQL 5 with seven ready examples in tabs, the
// Authorization header to fill in, and a fresh idempotency key from the
// server on every load. scripts/build-playground.sh bundles this file and
// everything it imports into web/static/playground/playground.js (and
// playground.css), so the page loads nothing from any other host and runs
// under the Playground's strict Content-Security-Policy (web/playground.go).
import { useMemo, useRef, useState } from "react";
import { createRoot } from "react-dom/client";
import { GraphiQL } from "graphiql";
import { createGraphiQLFetcher } from "@graphiql/toolkit";
// GraphiQL's own styles, without graphiql/style.css's copy of Monaco's CSS:
// esbuild already takes Monaco's CSS from the modules that import it.
import "@graphiql/react/style.css";
import "graphiql/graphiql.css";
// The Docs and History panes are plugins with styles of their own, which
// graphiql.css does not include (graphiql/style.css would, with Monaco's).
import "@graphiql/plugin-doc-explorer/style.css";
import "@graphiql/plugin-history/style.css";
// The fonts GraphiQL's UI uses, inlined as data: URIs (font-src data:).
import "@graphiql/react/font/roboto.css";
import "@graphiql/react/font/fira-code.css";
// CMPay's page styles, last so that they win.
import "./page.css";

// This script's own URL: the Monaco workers are files beside it.
const assets = document.currentScript.src;

// Monaco, GraphiQL 5's editor, runs its language services in web workers.
// They are bundled as separate files served from /playground/assets/ (a
// worker from a blob: or data: URL would need more than worker-src 'self').
// globalAPI puts Monaco's documented API on window.monaco, as Monaco's own
// AMD build does; the browser test reads and fills the editors through it
// (monaco.editor.getEditors()).
globalThis.MonacoEnvironment = {
  globalAPI: true,
  getWorker(_workerId, label) {
    const file = { json: "json.worker.js", graphql: "graphql.worker.js" }[label] || "editor.worker.js";
    return new Worker(new URL(file, assets), { name: label });
  },
};

const root = document.getElementById("graphiql");
const key = root.dataset.idempotencyKey;
const endpoint = new URL(root.dataset.endpoint, location.href);

const placeholderAuthorization = "Bearer <paste the API token cmpay printed at start, or one from API_TOKENS>";
const placeholderHeaders = JSON.stringify({ Authorization: placeholderAuthorization }, null, 2);

// bearerToken is the token in a Headers tab's text, or "" while it holds
// the placeholder, no token, or text that is not (yet) JSON.
function bearerToken(text) {
  try {
    const value = JSON.parse(text || "{}");
    const auth = Object.entries(value).find(([name]) => name.toLowerCase() === "authorization");
    const m = auth && typeof auth[1] === "string" && auth[1].match(/^Bearer\s+([^\s<>]+)$/);
    return m ? m[1] : "";
  } catch {
    return "";
  }
}

// The token survives a reload, not the browser tab: GraphiQL's Headers tab
// (persisted: shouldPersistHeaders, which GraphiQL's settings can turn off)
// is kept in the tab's sessionStorage, under GraphiQL's key for it. In
// localStorage it would stay with no expiry, readable by every page of this
// origin (the admin's too) and every later visit. Only headers with a real
// token are kept, so switching to a tab that still shows the placeholder
// does not wipe a token already given. GraphiQL's history, which stays in
// localStorage, keeps each run's headers: they are kept there with the
// placeholder in place of the token (historyWithoutTokens).
const headersKey = "graphiql:headers";
const historyKeys = new Set(["graphiql:queries", "graphiql:favorites"]);
// Earlier versions kept the Headers tab in localStorage: forget it there.
localStorage.removeItem(headersKey);
for (const k of historyKeys) {
  const kept = localStorage.getItem(k);
  if (kept === null) continue;
  const scrubbed = historyWithoutTokens(kept);
  if (scrubbed === null) localStorage.removeItem(k);
  else if (scrubbed !== kept) localStorage.setItem(k, scrubbed);
}
const storedHeaders = sessionStorage.getItem(headersKey);
const headers = bearerToken(storedHeaders) ? storedHeaders : placeholderHeaders;

// historyWithoutTokens is GraphiQL's stored history ({"queries": [{query,
// variables, headers, …}]}) with every entry's Authorization header
// replaced by the placeholder; null when it is not what GraphiQL writes.
function historyWithoutTokens(text) {
  try {
    const value = JSON.parse(text);
    for (const items of Object.values(value)) {
      for (const item of Array.isArray(items) ? items : []) {
        if (item && typeof item === "object" && item.headers) item.headers = headersWithoutToken(item.headers);
      }
    }
    return JSON.stringify(value);
  } catch {
    return null;
  }
}

// headersWithoutToken is a Headers tab's JSON with the placeholder as its
// Authorization header; null when it is not JSON, which is not kept.
function headersWithoutToken(text) {
  try {
    const value = JSON.parse(text);
    if (!value || typeof value !== "object" || Array.isArray(value)) return null;
    let changed = false;
    for (const name of Object.keys(value)) {
      if (name.toLowerCase() === "authorization" && value[name] !== placeholderAuthorization) {
        value[name] = placeholderAuthorization;
        changed = true;
      }
    }
    return changed ? JSON.stringify(value, null, 2) : text;
  } catch {
    return null;
  }
}

const createMutation = `# Create a payment. Run it once: replayed is false.
# Run it again: the same payment comes back with replayed true; nothing new is charged.
# Change the amount and run it: IDEMPOTENCY_KEY_REUSED, and nothing changes.
# First put your API token in the Headers tab below.
mutation CreatePayment($input: CreatePaymentInput!, $idempotencyKey: String!) {
  createPayment(input: $input, idempotencyKey: $idempotencyKey) {
    replayed
    payment {
      id
      amount
      currency
      method
      createdAt
      replayCount
      rejectedCount
      attempts { outcome at differingFields }
    }
  }
}
`;

const variables = (amount) =>
  JSON.stringify(
    { idempotencyKey: key, input: { clientId: "playground", amount, currency: "BRL", method: "PIX" } },
    null,
    2,
  );

const replayMutation = createMutation
  .replace(
    /^(# .*\n)+/,
    "# A retry of the first tab's request: same key, same payload, written differently\n" +
      '# ("49.9" instead of "49.90"). Run the first tab, then this one: replayed is true.\n',
  )
  .replace("mutation CreatePayment", "mutation RetryPayment");

const listQuery = `# Payments, newest first. Pass pageInfo.endCursor as after to get the next page.
# filter: {flagged: true} keeps payments whose key was replayed or rejected.
query Payments($after: String) {
  payments(first: 10, after: $after, filter: {clientId: "playground"}) {
    edges {
      node { id amount currency idempotencyKey createdAt replayCount rejectedCount }
    }
    pageInfo { hasNextPage endCursor }
  }
}
`;

const lifecycleOperations = `# A payment's life: authorize, capture, refund. Each operation takes an idempotency key
# of its own and keeps the same promise: run any of them twice and nothing happens twice.
# 1. Run Authorize: a payment of 120.00, status AUTHORIZED. Put its id in paymentId below.
# 2. Run Capture: 100.00 captured, the rest released. Run it again: replayed is true.
# 3. Run Refund: 30.00 back, status PARTIALLY_REFUNDED. Run it again: the same refund id.
#    Change its amount and run it: IDEMPOTENCY_KEY_REUSED. Change refundKey to refund more.
# Cancel releases a payment still AUTHORIZED instead of capturing it: change authorizeKey,
# run Authorize, put the new id in paymentId, run Cancel: status CANCELED.
mutation Authorize($authorizeKey: String!) {
  createPayment(
    input: {clientId: "playground", amount: "120.00", currency: "BRL", method: CREDIT_CARD, capture: false}
    idempotencyKey: $authorizeKey
  ) {
    replayed
    payment { id status amount capturedAmount }
  }
}

mutation Capture($paymentId: ID!, $captureKey: String!) {
  capturePayment(paymentId: $paymentId, amount: "100.00", idempotencyKey: $captureKey) {
    replayed
    payment { id status capturedAmount capturedAt }
  }
}

mutation Refund($paymentId: ID!, $refundKey: String!) {
  refundPayment(paymentId: $paymentId, amount: "30.00", reason: "one item returned", idempotencyKey: $refundKey) {
    replayed
    refund { id amount reason createdAt }
    payment {
      status capturedAmount refundedAmount
      attempts { operation idempotencyKey outcome differingFields }
    }
  }
}

mutation Cancel($paymentId: ID!, $cancelKey: String!) {
  cancelPayment(paymentId: $paymentId, idempotencyKey: $cancelKey) {
    replayed
    payment { id status canceledAt }
  }
}
`;

const lifecycleVariables = JSON.stringify(
  {
    paymentId: "<the id Authorize returned>",
    authorizeKey: key + "-authorize",
    captureKey: key + "-capture",
    refundKey: key + "-refund-1",
    cancelKey: key + "-cancel",
  },
  null,
  2,
);

// The processor's answers: the sandbox answers by paymentMethodToken, with
// Stripe's test tokens, so the same requests work against PROCESSOR=stripe.
const declineMutation = `# A payment the processor declines. pm_card_chargeDeclined is a Stripe test token; the sandbox
# declines it with card_declined (pm_card_chargeDeclinedInsufficientFunds: insufficient_funds).
# The answer is not an error: the payment is DECLINED with its declineCode, and no money moved.
# Run it again: replayed is true, the same declined payment. A new try needs a new key.
mutation DeclinedPayment($input: CreatePaymentInput!, $idempotencyKey: String!) {
  createPayment(input: $input, idempotencyKey: $idempotencyKey) {
    replayed
    payment {
      id
      status
      declineCode
      processor
      processorCalls { operation outcome code durationMs }
    }
  }
}
`;

const slowMutation = `# A payment whose processor is slow. The sandbox answers pm_sandbox_slow only after PROCESSOR_TIMEOUT
# (10s by default), so the first answer is PROCESSING: the processor's answer is not known yet.
# CMPay resolves it by itself PROCESSOR_RECOVERY_AFTER (30s by default) after that timeout: about 40s
# after the create with the defaults. Run SlowPayment again with the same key meanwhile or later:
# replayed is true, never a second charge; once resolved the payment is CAPTURED. To watch it, paste
# the id SlowPayment returned into paymentId in the variables below, then run PaymentAtProcessor
# (until you do, it answers "payment": null: no payment has the placeholder's id).
mutation SlowPayment($input: CreatePaymentInput!, $idempotencyKey: String!) {
  createPayment(input: $input, idempotencyKey: $idempotencyKey) {
    replayed
    payment { id status processorReference processorCalls { operation outcome at durationMs } }
  }
}

query PaymentAtProcessor($paymentId: ID!) {
  payment(id: $paymentId) {
    status
    pendingOperation
    processorCalls { operation processorIdempotencyKey outcome code at durationMs }
  }
}
`;

const tokenVariables = (suffix, token, extra = {}) =>
  JSON.stringify(
    {
      idempotencyKey: key + suffix,
      input: { clientId: "playground", amount: "25.00", currency: "BRL", method: "CREDIT_CARD", paymentMethodToken: token },
      ...extra,
    },
    null,
    2,
  );

const pixMutation = `# A Pix the payer pays later. With SANDBOX_METHODS=async (or Stripe) the create answers PENDING with
# the Pix code to show the payer (nextAction); with the default sandbox it is paid at once, as before.
# In the sandbox, the payer pays with POST /sandbox/payments/{id}/pay (a token with payments:write);
# then PixPayment shows it CAPTURED with paidAt. Four requests from creation to payment: create, show
# the code again (run PixPayment), pay, read it back.
mutation PixLater($input: CreatePaymentInput!, $idempotencyKey: String!) {
  createPayment(input: $input, idempotencyKey: $idempotencyKey) {
    replayed
    payment { id status nextAction { type pixCode expiresAt } }
  }
}

query PixPayment($paymentId: ID!) {
  payment(id: $paymentId) { status nextAction { pixCode expiresAt } paidAt expiredAt }
}
`;

const pixVariables = JSON.stringify(
  {
    idempotencyKey: key + "-pix",
    input: { clientId: "playground", amount: "25.00", currency: "BRL", method: "PIX" },
    paymentId: "<the id PixLater returned>",
  },
  null,
  2,
);

// Keep GraphiQL's preferences (theme, panes) and history, and the Headers
// tab (in sessionStorage, above), but not its tabs or other editors: a
// reload must bring the examples back with a new key instead of the last
// session's.
const volatile = new Set(["graphiql:tabState", "graphiql:query", "graphiql:variables"]);
const storage = {
  getItem: (k) => {
    if (volatile.has(k)) return null;
    return k === headersKey ? sessionStorage.getItem(k) : localStorage.getItem(k);
  },
  setItem: (k, v) => {
    if (volatile.has(k)) return;
    if (k === headersKey) {
      if (bearerToken(v)) sessionStorage.setItem(k, v);
      return;
    }
    const kept = historyKeys.has(k) ? historyWithoutTokens(v) : v;
    if (kept !== null) localStorage.setItem(k, kept);
  },
  removeItem: (k) => (k === headersKey ? sessionStorage : localStorage).removeItem(k),
  clear: () => {
    sessionStorage.removeItem(headersKey);
    localStorage.clear();
  },
  get length() {
    return localStorage.length;
  },
};

// Queries and mutations go over HTTP to /graphql. Subscriptions go over a
// WebSocket to the same path (graphql-ws, the graphql-transport-ws
// protocol): the toolkit opens one per subscription and sends the Headers
// tab's JSON, merged over wsConnectionParams, as the connection_init
// payload, so {"Authorization": "Bearer <token>"} reaches the server there.
//
// Each tab has Headers of its own, made at load: a token pasted into one
// tab would leave the other examples on the placeholder, each answering
// 401 until it is pasted there too. So a request whose tab holds no token
// of its own is sent with the last token given in any tab; a tab with a
// token of its own keeps it.
const newFetcher = (token) => {
  const fetcher = createGraphiQLFetcher({
    url: endpoint.href,
    subscriptionUrl: endpoint.href.replace(/^http/, "ws"),
  });
  return (params, opts) => fetcher(params, { ...opts, headers: withToken(opts?.headers, token) });
};

// withToken is a tab's headers with Authorization set to the given token,
// unless the tab has a real token of its own.
function withToken(headers, token) {
  const out = { ...headers };
  const name = Object.keys(out).find((n) => n.toLowerCase() === "authorization");
  if (!token || (name && bearerToken(JSON.stringify({ [name]: out[name] })))) return out;
  if (name) delete out[name];
  out.Authorization = `Bearer ${token}`;
  return out;
}

const createVariables = variables("49.90");

// Playground sends nothing until there is a token: GraphiQL's schema
// request on load would only get a 401, shown in the response pane and
// left there after the token is put in. schema={null} tells GraphiQL not
// to ask; once the Headers tab holds a token (typed, pasted, or kept from
// the last visit) the schema is fetched with it, and fetched again when the
// token changes (a new fetcher), after a pause so that typing one does not
// send a request per key.
function Playground() {
  const [token, setToken] = useState(bearerToken(headers));
  const timer = useRef(0);
  const fetcher = useMemo(() => newFetcher(token), [token]);
  const onEditHeaders = (text) => {
    clearTimeout(timer.current);
    timer.current = setTimeout(() => {
      const next = bearerToken(text);
      if (next) setToken(next);
    }, 400);
  };
  return (
    <GraphiQL
      fetcher={fetcher}
      schema={token ? undefined : null}
      onEditHeaders={onEditHeaders}
      storage={storage}
      shouldPersistHeaders
      defaultEditorToolsVisibility="headers"
      // The first tab's editors start from these, not from defaultTabs[0];
      // new tabs get defaultHeaders.
      initialQuery={createMutation}
      initialVariables={createVariables}
      initialHeaders={headers}
      defaultHeaders={headers}
      defaultTabs={[
        { query: createMutation, variables: createVariables, headers },
        { query: replayMutation, variables: variables("49.9"), headers },
        { query: listQuery, variables: "{}", headers },
        { query: lifecycleOperations, variables: lifecycleVariables, headers },
        { query: declineMutation, variables: tokenVariables("-declined", "pm_card_chargeDeclined"), headers },
        { query: slowMutation, variables: tokenVariables("-slow", "pm_sandbox_slow", { paymentId: "<paste the id SlowPayment returned here>" }), headers },
        { query: pixMutation, variables: pixVariables, headers },
      ]}
    />
  );
}

createRoot(root).render(<Playground />);
