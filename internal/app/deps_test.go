package app

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/cmpay/cmpay"

// layers says which of the module's packages a lower layer may depend on
// at all, directly or not: storage (database, internal/sqlq) serves the
// domain packages and must not know them, and configuration only reads
// the environment. A new dependency of theirs inside the module belongs
// here only if it is no domain package (payments, events, webhooks,
// staff, apitoken, auth, metrics, graph, httpapi, web…).
var layers = map[string][]string{
	"database":      {"models", "internal/clientid", "internal/iso4217", "internal/logrepeat", "internal/sqlq", "internal/startstop"},
	"internal/sqlq": {},
	"config":        {"clientaddr", "internal/secrets"},
}

// composers lists who may import the composition root and the command
// line: the command line calls the root, the entry point the command line.
var composers = map[string][]string{
	"internal/app": {"internal/cli"},
	"internal/cli": {""},
}

// listed is what `go list -json` says of a package.
type listed struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// TestDependenciesPointOneWay reads the module's import graph (go list) and
// fails on an arrow that points the wrong way: storage or configuration
// depending on a domain package, or anything but the command line reaching
// into the composition root.
func TestDependenciesPointOneWay(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("go list: %v\n%s", err, exit.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]listed{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")] = p
	}
	for pkg, allowed := range layers {
		p, ok := pkgs[pkg]
		if !ok {
			t.Errorf("go list does not know %s", pkg)
			continue
		}
		for _, dep := range p.Deps {
			inModule, ok := strings.CutPrefix(dep, module+"/")
			if ok && !slices.Contains(allowed, inModule) {
				t.Errorf("%s depends on %s (through %s): it may depend on %q only", pkg, inModule, via(pkgs, pkg, dep), allowed)
			}
		}
	}
	for pkg, p := range pkgs {
		for _, imp := range p.Imports {
			inModule, ok := strings.CutPrefix(imp, module+"/")
			if allowed, guarded := composers[inModule]; ok && guarded && !slices.Contains(allowed, pkg) {
				t.Errorf("%q imports %s: only %q may", pkg, inModule, allowed)
			}
		}
	}
}

// via names the direct import of pkg that brings dep in, for the message.
func via(pkgs map[string]listed, pkg, dep string) string {
	for _, imp := range pkgs[pkg].Imports {
		if imp == dep {
			return "a direct import"
		}
		if p, ok := pkgs[strings.TrimPrefix(imp, module+"/")]; ok && slices.Contains(p.Deps, dep) {
			return imp
		}
	}
	return "?"
}
