// Package browsertest runs tests in a real headless Chromium, driven with
// chromedp: pages are loaded, clicked and photographed as a user would.
package browsertest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// EnvRequire makes a missing browser fail a test instead of skipping it.
// scripts/test.sh installs Chromium and sets it, so CI never skips.
const EnvRequire = "CMPAY_REQUIRE_BROWSER"

// EnvScreenshots, when set, is a folder where screenshots are kept after
// the test; otherwise they go to the test's temporary folder.
const EnvScreenshots = "CMPAY_SCREENSHOTS"

// Chromium finds the browser: $CHROMIUM_PATH, or Debian's chromium.
func Chromium() (string, bool) {
	for _, candidate := range []string{os.Getenv("CHROMIUM_PATH"), "chromium", "chromium-browser", "google-chrome"} {
		if candidate == "" {
			continue
		}
		if path, err := exec.LookPath(candidate); err == nil {
			return path, true
		}
	}
	return "", false
}

// New starts a fresh headless Chromium for the test (its own profile, no
// background traffic) and returns a context for chromedp actions, ending
// with the test or after timeout.
func New(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	path, ok := Chromium()
	if !ok {
		msg := "NO BROWSER: Chromium is not installed, so this real-browser test did not run. " +
			"Install Debian's chromium (apt-get install chromium); ./scripts/test.sh does, and never skips."
		if os.Getenv(EnvRequire) != "" {
			t.Fatal(msg)
		}
		fmt.Fprintln(os.Stderr, "\n!!! "+t.Name()+": "+msg)
		t.Skip(msg)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox, // tests run as root in CI
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	// Start the browser now, once: actions and event subscriptions made
	// later from several goroutines then share it instead of racing to
	// start one each.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// Screenshot saves a full-page PNG and logs where it is.
func Screenshot(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	dir := os.Getenv(EnvScreenshots)
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100 means PNG
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	return path
}

// SignIn answers every HTTP authentication challenge of the page with these
// credentials, as a user typing them into the browser's sign-in prompt.
func SignIn(t *testing.T, ctx context.Context, user, password string) {
	t.Helper()
	paused := chromedp.Events(ctx, fetch.RequestPaused)
	challenges := chromedp.Events(ctx, fetch.AuthRequired)
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			_, _ = chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
		}
	}()
	go func() {
		for ev, err := range challenges {
			if err != nil {
				return
			}
			_, _ = chromedp.Call(ctx, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{
				RequestID: ev.RequestID,
				AuthChallengeResponse: &fetch.AuthChallengeResponse{
					Response: fetch.AuthChallengeResponseResponseProvideCredentials,
					Username: user,
					Password: password,
				},
			})
		}
	}()
	on := true
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{HandleAuthRequests: &on}); err != nil {
		t.Fatalf("intercept sign-in prompts: %v", err)
	}
}

// Watcher records what a page does that a test must check: every request
// it sends, and every Content-Security-Policy violation it reports.
type Watcher struct {
	ctx      context.Context
	mu       sync.Mutex
	requests []string
}

// recordCSPViolations runs before any script of a page.
const recordCSPViolations = `window.__csp = [];
document.addEventListener("securitypolicyviolation", e => window.__csp.push(e.violatedDirective + " " + e.blockedURI));`

// Watch starts recording; call it before navigating.
func Watch(t *testing.T, ctx context.Context) *Watcher {
	t.Helper()
	w := &Watcher{ctx: ctx}
	events := chromedp.Events(ctx, network.RequestWillBeSent)
	go func() {
		for ev, err := range events {
			if err != nil {
				return
			}
			w.mu.Lock()
			w.requests = append(w.requests, ev.Request.URL)
			w.mu.Unlock()
		}
	}()
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: recordCSPViolations}); err != nil {
		t.Fatal(err)
	}
	return w
}

// Requests returns the URL of every request the page has sent so far, in
// order: tests use it to see that a page fetched what it should.
func (w *Watcher) Requests() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.requests...)
}

// Check fails the test for any request to a host other than serverURL's
// (data: URIs are not requests to anyone) and for any CSP violation of the
// page now loaded. It returns how many requests it checked.
func (w *Watcher) Check(t *testing.T, serverURL string) int {
	t.Helper()
	violations, err := chromedp.Run(w.ctx, chromedp.Evaluate[string](`(window.__csp || []).join("\n")`))
	if err != nil {
		t.Fatal(err)
	}
	if violations != "" {
		t.Errorf("Content-Security-Policy violations:\n%s", violations)
	}
	server, err := url.Parse(serverURL)
	if err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.requests {
		if u, err := url.Parse(r); err != nil || u.Scheme != "data" && u.Host != server.Host {
			t.Errorf("the page fetched %s, not from this server", r)
		}
	}
	return len(w.requests)
}
