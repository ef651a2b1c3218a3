// Sets up GraphiQL for CMPay: three ready examples in tabs, the
// Authorization header to fill in, and a fresh idempotency key from the
// server on every load. Nothing here is fetched from another host.
(function () {
  "use strict";
  var root = document.getElementById("graphiql");
  var key = root.dataset.idempotencyKey;
  var headers = JSON.stringify({ Authorization: "Bearer <paste the API token cmpay printed at start, or one from API_TOKENS>" }, null, 2);

  var createMutation = [
    "# Create a payment. Run it once: replayed is false.",
    "# Run it again: the same payment comes back with replayed true; nothing new is charged.",
    "# Change the amount and run it: IDEMPOTENCY_KEY_REUSED, and nothing changes.",
    "# First put your API token in the Headers tab below.",
    "mutation CreatePayment($input: CreatePaymentInput!, $idempotencyKey: String!) {",
    "  createPayment(input: $input, idempotencyKey: $idempotencyKey) {",
    "    replayed",
    "    payment {",
    "      id",
    "      amount",
    "      currency",
    "      method",
    "      createdAt",
    "      replayCount",
    "      rejectedCount",
    "      attempts { outcome at differingFields }",
    "    }",
    "  }",
    "}",
    ""
  ].join("\n");
  var variables = function (amount) {
    return JSON.stringify({
      idempotencyKey: key,
      input: { clientId: "playground", amount: amount, currency: "BRL", method: "PIX" }
    }, null, 2);
  };

  var replayMutation = createMutation.replace(
    /^(# .*\n)+/,
    "# A retry of the first tab's request: same key, same payload, written differently\n" +
    "# (\"49.9\" instead of \"49.90\"). Run the first tab, then this one: replayed is true.\n"
  ).replace("mutation CreatePayment", "mutation RetryPayment");

  var listQuery = [
    "# Payments, newest first. Pass pageInfo.endCursor as after to get the next page.",
    "# filter: {flagged: true} keeps payments whose key was replayed or rejected.",
    "query Payments($after: String) {",
    "  payments(first: 10, after: $after, filter: {clientId: \"playground\"}) {",
    "    edges {",
    "      node { id amount currency idempotencyKey createdAt replayCount rejectedCount }",
    "    }",
    "    pageInfo { hasNextPage endCursor }",
    "  }",
    "}",
    ""
  ].join("\n");

  // Keep GraphiQL's preferences, but not its tabs: a reload must bring the
  // examples back with a new key instead of the last session's.
  var storage = {
    getItem: function (k) { return /tabState|query|variables|headers/.test(k) ? null : localStorage.getItem(k); },
    setItem: function (k, v) { if (!/tabState|query|variables|headers/.test(k)) localStorage.setItem(k, v); },
    removeItem: function (k) { localStorage.removeItem(k); },
    clear: function () { localStorage.clear(); },
    get length() { return localStorage.length; }
  };

  var createVariables = variables("49.90");
  var fetcher = GraphiQL.createFetcher({ url: root.dataset.endpoint });
  ReactDOM.createRoot(root).render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      storage: storage,
      shouldPersistHeaders: false,
      defaultEditorToolsVisibility: "headers",
      // GraphiQL 4 fills the first tab's editors from these, not from
      // defaultTabs[0]; new tabs get defaultHeaders.
      variables: createVariables,
      headers: headers,
      defaultHeaders: headers,
      defaultTabs: [
        { query: createMutation, variables: createVariables, headers: headers },
        { query: replayMutation, variables: variables("49.9"), headers: headers },
        { query: listQuery, variables: "{}", headers: headers }
      ]
    })
  );
})();
