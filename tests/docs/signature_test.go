package docs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/webhooks"
)

// The signature checks that docs/api/events.md gives receivers, in Go and
// in JavaScript, are run here against what the server signs: a receiver
// that copies a wrong one would refuse every delivery, or accept forged
// ones.

// signatureCases are deliveries a receiver must accept or refuse.
func signatureCases() []struct {
	name, secret, header, body string
	want                       bool
} {
	const secret, body = "whsec_docs-example-secret", `{"id":"1","type":"PAYMENT_CREATED"}`
	now := time.Now()
	return []struct {
		name, secret, header, body string
		want                       bool
	}{
		{"signed now", secret, webhooks.Sign(secret, now, []byte(body)), body, true},
		{"body changed", secret, webhooks.Sign(secret, now, []byte(body)), body + " ", false},
		{"another secret", "whsec_another", webhooks.Sign(secret, now, []byte(body)), body, false},
		{"ten minutes old", secret, webhooks.Sign(secret, now.Add(-10*time.Minute), []byte(body)), body, false},
		{"no signature", secret, "t=" + strconv.FormatInt(now.Unix(), 10), body, false},
		// 64 characters as the hex digest has, 65 bytes: a check that
		// compares lengths in characters throws instead of refusing.
		{"v1 of 64 characters, not 64 bytes", secret,
			"t=" + strconv.FormatInt(now.Unix(), 10) + ",v1=\u00e9" + strings.Repeat("0", 63), body, false},
	}
}

// exampleBlock returns the body of the block fenced as lang in the file
// that contains marker.
func exampleBlock(t *testing.T, file, lang, marker string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), file))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parseBlocks(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		if b.lang == lang && strings.Contains(b.body, marker) {
			return b.body
		}
	}
	t.Fatalf("%s has no %s block with %q", file, lang, marker)
	return ""
}

// TestSignatureExamples builds the Go check and runs the JavaScript one
// of docs/api/events.md on deliveries signed by webhooks.Sign.
func TestSignatureExamples(t *testing.T) {
	t.Parallel()
	t.Run("go", func(t *testing.T) {
		dir := t.TempDir()
		program := "package main\n\n" + exampleBlock(t, "docs/api/events.md", "go", "func verify(") + `

func main() {
	if verify(os.Args[1], os.Args[2], []byte(os.Args[3])) {
		fmt.Println("accepted")
	} else {
		fmt.Println("refused")
	}
}
`
		// The example's import block, with what main needs added.
		program = strings.Replace(program, "import (", "import (\n\t\"fmt\"\n\t\"os\"", 1)
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o644); err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(dir, "verify")
		build := goBuild(dir, bin, "main.go")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("the Go example does not build: %v\n%s\n%s", err, out, program)
		}
		checkVerifier(t, bin)
	})
	t.Run("javascript", func(t *testing.T) {
		node, err := exec.LookPath("node")
		if err != nil {
			t.Skip("no node on PATH; ./scripts/test.sh installs it")
		}
		dir := t.TempDir()
		program := exampleBlock(t, "docs/api/events.md", "js", "export function verify(") + `
const [secret, header, body] = process.argv.slice(2);
console.log(verify(secret, header, body) ? "accepted" : "refused");
`
		script := filepath.Join(dir, "verify.mjs")
		if err := os.WriteFile(script, []byte(program), 0o644); err != nil {
			t.Fatal(err)
		}
		checkVerifier(t, node, script)
	})
}

// checkVerifier runs a verifier on every case: it is given the secret, the
// CMPay-Signature header and the body, and says accepted or refused.
func checkVerifier(t *testing.T, command ...string) {
	t.Helper()
	for _, c := range signatureCases() {
		args := append(append([]string(nil), command[1:]...), c.secret, c.header, c.body)
		out, err := exec.Command(command[0], args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, out)
		}
		want := map[bool]string{true: "accepted", false: "refused"}[c.want]
		if got := strings.TrimSpace(string(out)); got != want {
			t.Errorf("%s: the example %s the delivery, want %s", c.name, got, want)
		}
	}
}
