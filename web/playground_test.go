package web

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/chromedp/chromedp"

	"github.com/cmpay/cmpay/internal/browsertest"
)

// The embedded Playground files are exactly those scripts/build-playground.sh
// built: every file of static/playground is listed in SHA256SUMS (nothing
// unbuilt slipped in, nothing built is missing) with its checksum.
func TestPlaygroundAssetsMatchTheirChecksums(t *testing.T) {
	t.Parallel()
	sums, err := static.Open("static/playground/SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	defer sums.Close()
	var listed []string
	sc := bufio.NewScanner(sums)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		want, name, _ := strings.Cut(line, "  ")
		listed = append(listed, name)
		data, gzipped, ok := readAsset(static, "static/playground/"+name)
		if !ok {
			t.Errorf("%s is listed but not embedded", name)
			continue
		}
		if gzipped {
			var err error
			if data, err = gunzip(data); err != nil {
				t.Errorf("%s.gz: %v", name, err)
				continue
			}
		}
		got := sha256.Sum256(data)
		if hex.EncodeToString(got[:]) != want {
			t.Errorf("%s: sha256 %x, want %s; run scripts/build-playground.sh", name, got, want)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	entries, err := fs.ReadDir(static, "static/playground")
	if err != nil {
		t.Fatal(err)
	}
	var embedded []string
	for _, e := range entries {
		if e.Name() != "SHA256SUMS" {
			embedded = append(embedded, strings.TrimSuffix(e.Name(), ".gz"))
		}
	}
	slices.Sort(listed)
	if !slices.Equal(listed, embedded) {
		t.Errorf("SHA256SUMS lists %q, static/playground holds %q; run scripts/build-playground.sh", listed, embedded)
	}
	// The bundle, its styles, Monaco's workers and the licences.
	for _, name := range []string{"playground.js", "playground.css", "editor.worker.js", "json.worker.js", "graphql.worker.js", "LICENSES.txt"} {
		if !slices.Contains(listed, name) {
			t.Errorf("%s is not part of the build", name)
		}
	}
}

// LICENSES.txt carries the licence of the main packages bundled into the
// Playground (build.mjs adds every package that has code in it).
func TestPlaygroundLicences(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	PlaygroundAssets().ServeHTTP(rec, httptest.NewRequest("GET", playgroundPrefix+"LICENSES.txt", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("LICENSES.txt: %d", rec.Code)
	}
	text := rec.Body.String()
	for _, pkg := range []string{"graphiql@5.", "@graphiql/react@", "react@19.", "react-dom@19.", "graphql@", "graphql-ws@", "monaco-editor@", "monaco-graphql@"} {
		if !strings.Contains(text, "\n"+pkg) {
			t.Errorf("LICENSES.txt has no section for %s", pkg)
		}
	}
	if !strings.Contains(text, "Permission is hereby granted, free of charge") {
		t.Error("LICENSES.txt holds no MIT licence text")
	}
}

func renderPlayground(t *testing.T) (*httptest.ResponseRecorder, *goquery.Document) {
	t.Helper()
	rec := httptest.NewRecorder()
	Playground().ServeHTTP(rec, httptest.NewRequest("GET", "/playground", nil))
	doc, err := goquery.NewDocumentFromReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return rec, doc
}

// cspDirectives splits a Content-Security-Policy into its directives.
func cspDirectives(csp string) map[string]string {
	m := map[string]string{}
	for d := range strings.SplitSeq(csp, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		m[name] = value
	}
	return m
}

func TestPlaygroundPage(t *testing.T) {
	t.Parallel()
	rec, doc := renderPlayground(t)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	csp := rec.Header().Get("Content-Security-Policy")
	d := cspDirectives(csp)
	// Scripts and workers from this server only, never inline or eval'd;
	// styles may be inline (Monaco's, see playgroundCSP) but come from no
	// other host; nothing is fetched from or sent to another host.
	for name, want := range map[string]string{
		"default-src":     "'none'",
		"script-src":      "'self'",
		"worker-src":      "'self'",
		"style-src":       "'self' 'unsafe-inline'",
		"connect-src":     "'self'",
		"img-src":         "'self' data:",
		"font-src":        "'self' data:",
		"frame-ancestors": "'none'",
	} {
		if d[name] != want {
			t.Errorf("CSP %s is %q, want %q (in %q)", name, d[name], want, csp)
		}
	}
	if strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "blob:") {
		t.Errorf("CSP %q allows eval or blob: URLs", csp)
	}
	if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("headers %v", rec.Header())
	}
	if doc.Find("script:not([src])").Length() != 0 {
		t.Error("the page has an inline script")
	}
	// Every script and stylesheet is one of ours, and embedded.
	refs := 0
	doc.Find("script[src], link[rel=stylesheet]").Each(func(_ int, s *goquery.Selection) {
		refs++
		ref := s.AttrOr("src", s.AttrOr("href", ""))
		name, ok := strings.CutPrefix(ref, playgroundPrefix)
		if !ok {
			t.Errorf("%s is not served from %s", ref, playgroundPrefix)
			return
		}
		if _, _, ok := readAsset(static, "static/playground/"+name); !ok {
			t.Errorf("%s is not embedded", ref)
		}
	})
	if refs != 2 {
		t.Errorf("%d scripts and stylesheets, want the bundle's playground.js and playground.css", refs)
	}

	key := doc.Find("#graphiql").AttrOr("data-idempotency-key", "")
	_, again := renderPlayground(t)
	if key == "" || key == again.Find("#graphiql").AttrOr("data-idempotency-key", "") {
		t.Errorf("idempotency key %q is not fresh on every load", key)
	}
}

// The text assets are embedded gzipped: sent as they are to a browser
// (Content-Encoding: gzip), decompressed to a client that does not take
// gzip; either way the bytes served are the ones SHA256SUMS names.
func TestPlaygroundAssetsCompressed(t *testing.T) {
	t.Parallel()
	get := func(acceptEncoding string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", playgroundPrefix+"playground.js", nil)
		if acceptEncoding != "" {
			req.Header.Set("Accept-Encoding", acceptEncoding)
		}
		rec := httptest.NewRecorder()
		PlaygroundAssets().ServeHTTP(rec, req)
		return rec
	}
	zipped, plain := get("gzip, deflate, br"), get("")
	if zipped.Header().Get("Content-Encoding") != "gzip" || plain.Header().Get("Content-Encoding") != "" ||
		zipped.Header().Get("Vary") != "Accept-Encoding" {
		t.Fatalf("encodings: %v / %v", zipped.Header(), plain.Header())
	}
	unzipped, err := gunzip(zipped.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(unzipped, plain.Body.Bytes()) || zipped.Body.Len() >= plain.Body.Len()/2 {
		t.Errorf("gzip answer %d bytes, plain %d: not the same file, or not compressed", zipped.Body.Len(), plain.Body.Len())
	}
	if got := get("gzip;q=0").Header().Get("Content-Encoding"); got != "" {
		t.Errorf("gzip;q=0 got Content-Encoding %q", got)
	}
	// Folders are not listed.
	for _, dir := range []string{"", "/", "static"} {
		rec := httptest.NewRecorder()
		PlaygroundAssets().ServeHTTP(rec, httptest.NewRequest("GET", playgroundPrefix+dir, nil))
		if rec.Code != http.StatusNotFound {
			t.Errorf("%q: %d, want 404", playgroundPrefix+dir, rec.Code)
		}
	}
}

func TestPlaygroundAssetsServed(t *testing.T) {
	t.Parallel()
	// Under nosniff a browser runs a script or applies a stylesheet only
	// when its Content-Type says so; other types are not checked.
	for name, contentType := range map[string]string{
		"playground.js":     "text/javascript; charset=utf-8",
		"playground.css":    "text/css; charset=utf-8",
		"editor.worker.js":  "text/javascript; charset=utf-8",
		"json.worker.js":    "text/javascript; charset=utf-8",
		"graphql.worker.js": "text/javascript; charset=utf-8",
		"codicon.ttf":       "",
		"LICENSES.txt":      "",
	} {
		rec := httptest.NewRecorder()
		PlaygroundAssets().ServeHTTP(rec, httptest.NewRequest("GET", playgroundPrefix+name, nil))
		h := rec.Header()
		// Workers run under the CSP of their own response: it must be ours.
		if rec.Code != http.StatusOK || rec.Body.Len() == 0 || h.Get("X-Content-Type-Options") != "nosniff" ||
			contentType != "" && h.Get("Content-Type") != contentType || h.Get("Content-Security-Policy") != playgroundCSP {
			t.Errorf("%s: status %d, %d bytes, headers %v", name, rec.Code, rec.Body.Len(), h)
		}
	}
}

// TestPlaygroundSubscriptionInBrowser runs a subscription from the
// Playground in headless Chromium. GraphiQL sends it over a WebSocket to
// ws://<host>/graphql with the graphql-transport-ws protocol (graphql-ws),
// and the JSON of its Headers tab must arrive as the connection_init
// payload: that is where the server reads the Authorization header of a
// subscription. The server side here is a minimal graphql-transport-ws
// endpoint that records what the browser sends and streams two results.
func TestPlaygroundSubscriptionInBrowser(t *testing.T) {
	t.Parallel()
	ctx := browsertest.New(t, 90*time.Second)

	got := make(chan wsSession, 1)
	var introspected atomic.Bool
	mux := http.NewServeMux()
	mux.Handle("GET /playground", Playground())
	mux.Handle("GET /playground/assets/", PlaygroundAssets())
	mux.HandleFunc("/graphql", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "websocket" {
			// GraphiQL's introspection: no schema here, and none is needed
			// to send a subscription. It comes once the Headers tab holds
			// a token, with the fetcher that token made.
			introspected.Store(true)
			http.Error(w, `{"errors":[{"message":"no schema in this test"}]}`, http.StatusBadRequest)
			return
		}
		got <- serveSubscription(w, r, []string{
			`{"data":{"paymentEvents":{"id":"pay_1","n":1}}}`,
			`{"data":{"paymentEvents":{"id":"pay_1","n":2}}}`,
		})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	watch := browsertest.Watch(t, ctx)

	poll := openPlayground(t, ctx, srv.URL, "playground-subscription-failed")
	poll(editorJS + `; editor(v => v.includes("Authorization")) && editor(v => v.includes("mutation CreatePayment")) ? "ready" : ""`)
	const headers = `{"Authorization": "Bearer sub-token"}`
	poll(editorJS + fmt.Sprintf(`; editor(v => v.includes("Authorization")).setValue(%q);
editor(v => v.includes("mutation CreatePayment")).setValue("subscription PaymentEvents { paymentEvents { id n } }"); "ok"`, headers))
	// GraphiQL saves the editors into the tab a moment later and names the
	// tab after the operation.
	poll(`document.querySelector(".graphiql-tab-active .graphiql-tab-button")?.textContent.trim() === "PaymentEvents" ? "saved" : ""`)
	// The Playground takes the token a moment after it is typed and makes a
	// new fetcher for it; a subscription started before would run on the
	// old one and be dropped with it.
	for deadline := time.Now().Add(20 * time.Second); !introspected.Load(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the Playground never asked for the schema with the token")
		}
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(".graphiql-execute-button"))); err != nil {
		t.Fatal(err)
	}

	var s wsSession
	select {
	case s = <-got:
	case <-time.After(20 * time.Second):
		browsertest.Screenshot(t, ctx, "playground-subscription-failed")
		t.Fatal("no WebSocket connection to /graphql within 20s")
	}
	if s.err != nil {
		t.Fatalf("WebSocket session: %v", s.err)
	}
	if s.protocol != "graphql-transport-ws" {
		t.Errorf("subprotocols %q, want graphql-transport-ws", s.protocol)
	}
	var init map[string]any
	if err := json.Unmarshal(s.initPayload, &init); err != nil || len(init) != 1 || init["Authorization"] != "Bearer sub-token" {
		t.Errorf("connection_init payload %s, want the Headers tab's %s", s.initPayload, headers)
	}
	if !strings.Contains(s.query, "subscription PaymentEvents") {
		t.Errorf("subscribed to %q", s.query)
	}
	// The latest result of the stream shows in the response pane.
	out := poll(editorJS + `; (editor(v => v.includes('"paymentEvents"') && v.includes('"n": 2')) || {getValue: () => ""}).getValue()`)
	if !strings.Contains(out, `"id": "pay_1"`) {
		t.Errorf("response pane:\n%s", out)
	}
	browsertest.Screenshot(t, ctx, "playground-subscription")
	watch.Check(t, srv.URL)
}

// wsSession is what the browser sent over one graphql-transport-ws
// connection.
type wsSession struct {
	protocol    string          // Sec-WebSocket-Protocol asked for
	initPayload json.RawMessage // payload of connection_init
	query       string          // the subscribe message's query
	err         error
}

// serveSubscription is the server side of one graphql-transport-ws
// connection, as far as this test needs it: the WebSocket handshake (RFC
// 6455), connection_init answered by connection_ack, one subscribe answered
// by a next message per result, then complete.
func serveSubscription(w http.ResponseWriter, r *http.Request, results []string) (s wsSession) {
	s.protocol = r.Header.Get("Sec-WebSocket-Protocol")
	if !slices.Contains(strings.Split(strings.ReplaceAll(s.protocol, " ", ""), ","), "graphql-transport-ws") {
		s.err = fmt.Errorf("subprotocols %q", s.protocol)
		http.Error(w, s.err.Error(), http.StatusBadRequest)
		return s
	}
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.err = err
		return s
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	accept := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Accept: %s\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n", base64.StdEncoding.EncodeToString(accept[:]))
	if s.err = rw.Flush(); s.err != nil {
		return s
	}

	type message struct {
		Type    string          `json:"type"`
		ID      string          `json:"id,omitempty"`
		Payload json.RawMessage `json:"payload,omitempty"`
	}
	read := func() (m message, err error) {
		data, err := readTextFrame(rw.Reader)
		if err == nil {
			err = json.Unmarshal(data, &m)
		}
		return m, err
	}
	send := func(m message) error {
		data, _ := json.Marshal(m)
		return writeTextFrame(rw.Writer, data)
	}

	m, err := read()
	if err != nil || m.Type != "connection_init" {
		s.err = fmt.Errorf("first message %+v, %v; want connection_init", m, err)
		return s
	}
	s.initPayload = m.Payload
	if s.err = send(message{Type: "connection_ack"}); s.err != nil {
		return s
	}
	if m, err = read(); err != nil || m.Type != "subscribe" {
		s.err = fmt.Errorf("second message %+v, %v; want subscribe", m, err)
		return s
	}
	var sub struct {
		Query string `json:"query"`
	}
	_ = json.Unmarshal(m.Payload, &sub)
	s.query = sub.Query
	for _, result := range results {
		if s.err = send(message{Type: "next", ID: m.ID, Payload: json.RawMessage(result)}); s.err != nil {
			return s
		}
	}
	s.err = send(message{Type: "complete", ID: m.ID})
	return s
}

// readTextFrame reads one WebSocket text message of the client: a single
// masked frame (browsers do not fragment messages this small).
func readTextFrame(r *bufio.Reader) ([]byte, error) {
	var head [2]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	if head[0] != 0x81 { // FIN, text
		return nil, fmt.Errorf("frame starts %#x, want a whole text frame", head[0])
	}
	if head[1]&0x80 == 0 {
		return nil, errors.New("client frame not masked")
	}
	n := uint64(head[1] & 0x7f)
	switch n {
	case 126:
		var ext [2]byte
		if _, err := io.ReadFull(r, ext[:]); err != nil {
			return nil, err
		}
		n = uint64(binary.BigEndian.Uint16(ext[:]))
	case 127:
		return nil, errors.New("frame too large for this test")
	}
	var mask [4]byte
	if _, err := io.ReadFull(r, mask[:]); err != nil {
		return nil, err
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, err
	}
	for i := range data {
		data[i] ^= mask[i%4]
	}
	return data, nil
}

// writeTextFrame writes one unmasked text frame, as a server does.
func writeTextFrame(w *bufio.Writer, data []byte) error {
	head := []byte{0x81}
	switch {
	case len(data) < 126:
		head = append(head, byte(len(data)))
	case len(data) <= 0xffff:
		head = append(head, 126)
		head = binary.BigEndian.AppendUint16(head, uint16(len(data)))
	default:
		return errors.New("message too large for this test")
	}
	if _, err := w.Write(append(head, data...)); err != nil {
		return err
	}
	return w.Flush()
}

// The slow payment's example says how long it takes with the defaults
// (the timeout, then the recovery delay: about 40 s; it said 30 s) and
// that its id must be pasted before PaymentAtProcessor can show anything
// (the placeholder answered "payment": null with no word why).
func TestPlaygroundSlowExampleSaysWhatToDo(t *testing.T) {
	t.Parallel()
	data, gzipped, ok := readAsset(static, "static/playground/playground.js")
	if !ok || !gzipped {
		t.Fatalf("playground.js embedded %v, gzipped %v", ok, gzipped)
	}
	js, err := gunzip(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"about 40s", "paste", "<paste the id SlowPayment returned here>", `"payment": null`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("the slow example lacks %q", want)
		}
	}
	if strings.Contains(string(js), "within PROCESSOR_RECOVERY_AFTER") {
		t.Error("the slow example still says it resolves within PROCESSOR_RECOVERY_AFTER")
	}
}

// operationRE finds the first operation's name in a GraphQL document.
var operationRE = regexp.MustCompile(`(?m)^\s*(?:query|mutation|subscription)\s+(\w+)`)

// A token pasted into one tab's Headers reaches the requests of every
// example tab whose Headers still hold the placeholder: each tab has
// headers of its own, made at load, and the other examples answered 401
// until the token was pasted into each. A tab with a token of its own
// sends that one.
func TestPlaygroundTokenReachesEveryTab(t *testing.T) {
	t.Parallel()
	ctx := browsertest.New(t, 90*time.Second)

	auth := make(chan string, 4)
	var introspected atomic.Bool
	mux := http.NewServeMux()
	mux.Handle("GET /playground", Playground())
	mux.Handle("GET /playground/assets/", PlaygroundAssets())
	mux.HandleFunc("POST /graphql", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Query string `json:"query"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		// The operation by the query's text: right after a tab is switched
		// GraphiQL may still send the last tab's operationName with it.
		m := operationRE.FindStringSubmatch(req.Query)
		if m == nil {
			http.Error(w, "no operation", http.StatusBadRequest)
			return
		}
		op := m[1]
		if op == "IntrospectionQuery" {
			introspected.Store(true)
			http.Error(w, `{"errors":[{"message":"no schema in this test"}]}`, http.StatusBadRequest)
			return
		}
		auth <- op + " " + r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":{"createPayment":null}}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	watch := browsertest.Watch(t, ctx)

	poll := openPlayground(t, ctx, srv.URL, "playground-token-tabs-failed")
	show := func(tab int, op string) {
		t.Helper()
		poll(fmt.Sprintf(`(() => { const b = document.querySelectorAll(".graphiql-tab-button")[%d]; if (!b) return ""; b.click(); return "ok"; })()`, tab))
		poll(fmt.Sprintf(`document.querySelector(".graphiql-tab-active .graphiql-tab-button")?.textContent.trim() === %q && `+
			`monaco.editor.getEditors().some(e => e.getValue().includes("mutation %s")) ? "shown" : ""`, op, op))
	}
	// run executes the tab shown (clicking a tab loads its saved editors
	// again, which would undo an edit not saved yet).
	run := func(op string) string {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(".graphiql-execute-button"))); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-auth:
			return got
		case <-time.After(20 * time.Second):
			browsertest.Screenshot(t, ctx, "playground-token-tabs-failed")
			t.Fatalf("no %s request within 20s", op)
			return ""
		}
	}

	// The token goes into the first tab's Headers, as its comment says. The
	// Playground takes it a moment after it is typed, and then asks for the
	// schema with it (a new fetcher).
	poll(editorJS + `; editor(v => v.includes("Authorization")) && editor(v => v.includes("mutation CreatePayment")) ? "ready" : ""`)
	poll(editorJS + `; editor(v => v.includes("Authorization")).setValue('{"Authorization": "Bearer tab-token"}'); "ok"`)
	for deadline := time.Now().Add(20 * time.Second); !introspected.Load(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the Playground never asked for the schema with the token")
		}
	}
	if got, want := run("CreatePayment"), "CreatePayment Bearer tab-token"; got != want {
		t.Errorf("first tab sent %q, want %q", got, want)
	}
	// The second tab's Headers still show the placeholder.
	show(1, "RetryPayment")
	if got, want := run("RetryPayment"), "RetryPayment Bearer tab-token"; got != want {
		t.Errorf("second tab sent %q, want %q: the token given in the first tab", got, want)
	}
	// A tab with a token of its own sends that one.
	show(4, "DeclinedPayment")
	poll(editorJS + `; editor(v => v.includes("Authorization") && v.includes("paste")).setValue('{"Authorization": "Bearer own-token"}'); "ok"`)
	if got, want := run("DeclinedPayment"), "DeclinedPayment Bearer own-token"; got != want {
		t.Errorf("a tab with its own token sent %q, want %q", got, want)
	}
	watch.Check(t, srv.URL)
}

// editorJS defines editor(test) in the page: the first of the Playground's
// editors whose text passes test, through Monaco's API (see the
// Playground's main.jsx).
const editorJS = `function editor(test) {
  return (window.monaco ? monaco.editor.getEditors() : []).find(e => test(e.getValue()));
}`

// openPlayground loads the Playground served at base in the browser ctx
// and returns poll, which evaluates js in the page until it gives a
// non-empty string, and returns it; after 20 s it fails the test with a
// screenshot named shot.
func openPlayground(t *testing.T, ctx context.Context, base, shot string) func(js string) string {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/playground"),
		chromedp.WaitVisible(chromedp.CSS(".graphiql-execute-button")),
	); err != nil {
		t.Fatalf("load the Playground: %v", err)
	}
	return func(js string) string {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			out, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
			if err != nil {
				t.Fatalf("evaluate %.80q: %v", js, err)
			}
			if out != "" {
				return out
			}
		}
		browsertest.Screenshot(t, ctx, shot)
		t.Fatalf("nothing within 20s from %.200s", js)
		return ""
	}
}
