package processor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
)

// Every kind is either known or unknown, refused only when known, and the
// engine's errors.As sees it through wrapping: the classification the
// engine relies on.
func TestKindClassification(t *testing.T) {
	known := map[Kind]bool{KindDeclined: true, KindInvalidRequest: true, KindNotFound: true,
		KindIdempotencyMismatch: true, KindAuthentication: true, KindUnsupported: true}
	refused := map[Kind]bool{KindDeclined: true, KindInvalidRequest: true}
	for k := KindUnknownError; k <= KindBadResponse; k++ {
		if got := k.Known(); got != known[k] {
			t.Errorf("%s.Known() = %v, want %v", k, got, known[k])
		}
		if got := k.Refused(); got != refused[k] {
			t.Errorf("%s.Refused() = %v, want %v", k, got, refused[k])
		}
		if k.String() == "" || k.String()[0] == 'k' {
			t.Errorf("kind %d has no name: %q", int(k), k.String())
		}
		var pe *Error
		wrapped := fmt.Errorf("capture: %w", &Error{Kind: k, Op: "capture"})
		if !errors.As(wrapped, &pe) || pe.Known() != known[k] || pe.Refused() != refused[k] {
			t.Errorf("wrapped %s: not seen through, or classified otherwise", k)
		}
	}
}

func TestErrorMessageAndUnwrap(t *testing.T) {
	cause := io.ErrUnexpectedEOF
	e := &Error{Kind: KindDeclined, Op: "create", Code: "insufficient_funds", HTTPStatus: 402, Message: "no funds", Err: cause}
	if got, want := e.Error(), "processor create: declined (HTTP 402): insufficient_funds: no funds: unexpected EOF"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(e, cause) {
		t.Error("Unwrap does not reach the cause")
	}
}

func TestContextKind(t *testing.T) {
	if _, ok := ContextKind(context.Background()); ok {
		t.Error("a live context has no kind")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if k, _ := ContextKind(ctx); k != KindCanceled {
		t.Errorf("canceled: %s", k)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 0)
	defer cancel()
	<-ctx.Done()
	if k, _ := ContextKind(ctx); k != KindTimeout {
		t.Errorf("deadline: %s", k)
	}
}

func TestRequestKeyAndValidateKey(t *testing.T) {
	if got := RequestKey("cmpay_1", ""); got != "cmpay_1" {
		t.Errorf("first request key = %q", got)
	}
	if got := RequestKey("cmpay_1", "confirm"); got != "cmpay_1_confirm" {
		t.Errorf("confirm key = %q", got)
	}
	for _, bad := range []string{"", "a b", "é", string(make([]byte, MaxKeyLen+1)), "a\x00"} {
		if ValidateKey(bad) == nil {
			t.Errorf("ValidateKey(%q) accepted", bad)
		}
	}
	if err := ValidateKey("cmpay_01JABC"); err != nil {
		t.Error(err)
	}
}
