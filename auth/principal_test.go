package auth

import (
	"context"
	"errors"
	"slices"
	"testing"
)

func TestParseScopes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    []Scope
		wantErr bool
	}{
		{"payments:read", []Scope{PaymentsRead}, false},
		{" metrics:read , payments:read,payments:read ", []Scope{PaymentsRead, MetricsRead}, false},
		{"payments:read,payments:write,payments:create,webhooks:manage,metrics:read", AllScopes, false},
		{"payments:create", []Scope{PaymentsCreate}, false},
		{"", nil, true},
		{" , ", nil, true},
		{"payments:admin", nil, true},
		{"Payments:Read", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseScopes(tt.in)
		if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
			t.Errorf("ParseScopes(%q) = %v, %v; want %v (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
	if got := JoinScopes(DefaultScopes); got != "payments:read,payments:write" {
		t.Errorf("default scopes %q", got)
	}
}

func TestRequire(t *testing.T) {
	t.Parallel()
	readOnly := Principal{Kind: KindAPIToken, ID: "tok_1", Name: "reader", Scopes: []Scope{PaymentsRead}}
	tests := []struct {
		name    string
		ctx     context.Context
		scope   Scope
		allowed bool
	}{
		{"a scope it has", WithPrincipal(context.Background(), readOnly), PaymentsRead, true},
		{"a scope it lacks", WithPrincipal(context.Background(), readOnly), PaymentsWrite, false},
		{"only signed in", WithPrincipal(context.Background(), readOnly), "", true},
		{"full access", WithPrincipal(context.Background(), FullAccess(KindEnvToken, "API_TOKENS")), MetricsRead, true},
		{"nobody", context.Background(), "", false},
		{"nobody, a scope", context.Background(), PaymentsRead, false},
	}
	for _, tt := range tests {
		err := Require(tt.ctx, tt.scope)
		if tt.allowed != (err == nil) {
			t.Errorf("%s: %v", tt.name, err)
		}
		if err != nil && !errors.Is(err, ErrForbidden) {
			t.Errorf("%s: %v does not unwrap to ErrForbidden", tt.name, err)
		}
	}
	var fe *ForbiddenError
	if err := Require(WithPrincipal(context.Background(), readOnly), PaymentsWrite); !errors.As(err, &fe) || fe.Scope != PaymentsWrite || err.Error() != "this token lacks the scope payments:write" {
		t.Errorf("the refusal %v does not name the missing scope", err)
	}
}

// A request that more than one scope opens needs any one of them: a
// payments:create token creates and reads one payment, and does nothing
// that needs payments:read or payments:write alone; payments:write still
// creates, and reads nothing.
func TestRequireAnyOf(t *testing.T) {
	t.Parallel()
	as := func(scopes ...Scope) context.Context {
		return WithPrincipal(context.Background(), Principal{Kind: KindAPIToken, ID: "tok_1", Name: "t", Scopes: scopes})
	}
	tests := []struct {
		name    string
		ctx     context.Context
		need    []Scope
		allowed bool
	}{
		{"create: creating", as(PaymentsCreate), CreatingPayments, true},
		{"create: reading a payment", as(PaymentsCreate), ReadingAPayment, true},
		{"create: listing", as(PaymentsCreate), []Scope{PaymentsRead}, false},
		{"create: capturing", as(PaymentsCreate), []Scope{PaymentsWrite}, false},
		{"write: creating", as(PaymentsWrite), CreatingPayments, true},
		{"write: reading a payment", as(PaymentsWrite), ReadingAPayment, false},
		{"read: creating", as(PaymentsRead), CreatingPayments, false},
		{"read: reading a payment", as(PaymentsRead), ReadingAPayment, true},
		{"nobody: creating", context.Background(), CreatingPayments, false},
	}
	for _, tt := range tests {
		if err := Require(tt.ctx, tt.need...); tt.allowed != (err == nil) {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
	err := Require(as(MetricsRead), CreatingPayments...)
	if err == nil || err.Error() != "this token lacks the scope payments:write or payments:create" {
		t.Errorf("the refusal %v does not name the scopes that would do", err)
	}
}

func TestClientBinding(t *testing.T) {
	t.Parallel()
	bound := WithPrincipal(context.Background(), Principal{Kind: KindAPIToken, Name: "shop", Scopes: DefaultScopes, ClientID: "shop-7"})
	unbound := WithPrincipal(context.Background(), FullAccess(KindEnvToken, "API_TOKENS"))

	if got := BoundClient(bound); got != "shop-7" {
		t.Errorf("BoundClient(bound) = %q, want shop-7", got)
	}
	if got := BoundClient(unbound); got != "" {
		t.Errorf("BoundClient(unbound) = %q, want every client", got)
	}
	for _, tt := range []struct {
		name   string
		ctx    context.Context
		client string
		sees   bool
	}{
		{"its own client", bound, "shop-7", true},
		{"another client", bound, "shop-8", false},
		{"a client differing in case", bound, "SHOP-7", false},
		{"an empty client", bound, "", false},
		{"unbound, any client", unbound, "shop-8", true},
	} {
		if got := Sees(tt.ctx, tt.client); got != tt.sees {
			t.Errorf("Sees(%s, %q) = %v", tt.name, tt.client, got)
		}
	}
	// A bound token's client id is stored in NFC; the request's may come
	// decomposed and is the same client.
	cafe := WithPrincipal(context.Background(), Principal{Kind: KindAPIToken, Name: "cafe", Scopes: DefaultScopes, ClientID: "caf\u00e9"})
	if !Sees(cafe, "cafe\u0301") {
		t.Error("an NFC-bound token does not see its client's payments named in NFD")
	}
}
