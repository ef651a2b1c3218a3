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

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// EnvRequire makes a missing browser fail a test instead of skipping it.
// scripts/test.sh installs Chromium and sets it, so CI never skips.
const EnvRequire = "CMPAY_REQUIRE_BROWSER"

// EnvScreenshots, when set, is a folder where screenshots are kept after
// the test; otherwise none is taken.
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

// Screenshot saves a full-page PNG in EnvScreenshots' folder and logs
// where it is. Without that folder it does nothing and returns "": a
// screenshot in the test's temporary folder was deleted with it unseen,
// and the twenty-odd a run took cost seconds of a loaded machine.
func Screenshot(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	dir := os.Getenv(EnvScreenshots)
	if dir == "" {
		return ""
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

// SignIn signs in to the admin at serverURL through its sign-in form, as a
// person types it, and fails the test unless the browser lands past it.
func SignIn(t *testing.T, ctx context.Context, serverURL, user, password string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(serverURL+"/admin/login"),
		chromedp.WaitVisible(chromedp.CSS(`input[name=username]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=username]`), user),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), password),
	); err != nil {
		t.Fatalf("sign in as %s: %v", user, err)
	}
	res, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`form[action="/admin/login"] button[type=submit]`)))
	if err != nil {
		t.Fatalf("sign in as %s: %v", user, err)
	}
	if u, _ := url.Parse(res.URL); res.Status != 200 || u.Path == "/admin/login" {
		t.Fatalf("sign in as %s: %d at %s", user, res.Status, res.URL)
	}
}

// Download clicks what sel selects, waits for the download it starts to
// complete, and returns the file's content.
func Download(t *testing.T, ctx context.Context, sel string) []byte {
	t.Helper()
	dir := t.TempDir()
	on := true
	if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: &on,
	}); err != nil {
		t.Fatalf("allow downloads: %v", err)
	}
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	progress := chromedp.BrowserEvents(dctx, browser.DownloadProgress)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		t.Fatalf("click %s: %v", sel, err)
	}
	for ev, err := range progress {
		if err != nil {
			t.Fatalf("download: %v", err)
		}
		switch ev.State {
		case browser.DownloadProgressStateCompleted:
			body, err := os.ReadFile(filepath.Join(dir, ev.GUID))
			if err != nil {
				t.Fatal(err)
			}
			return body
		case browser.DownloadProgressStateCanceled:
			t.Fatalf("download canceled")
		}
	}
	t.Fatal("no download")
	return nil
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
