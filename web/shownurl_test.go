package web

import "testing"

// An endpoint's URL shows where deliveries go (scheme, host, the path's
// first word) and none of what may be the client's secret.
func TestShownURLHidesSecrets(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ raw, want string }{
		{"https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX", "https://hooks.slack.com/services/…"},
		{"https://discord.com/api/webhooks/123456789012345678/abcDEF-token", "https://discord.com/api/…"},
		{"https://webhook.site/0b8e3c1e-4f4e-4c55-9d0c-6a2b1c3d4e5f", "https://webhook.site/…"},
		{"https://shop.example/hooks", "https://shop.example/hooks"},
		{"https://shop.example/hooks/", "https://shop.example/hooks"},
		{"https://shop.example", "https://shop.example"},
		{"https://shop.example/", "https://shop.example"},
		{"http://shop.example:8443/in/cmpay?token=s3cret#frag", "http://shop.example:8443/in/…?…"},
		{"https://shop:s3cret@shop.example/other", "https://…@shop.example/other"},
		{"https://s3cret@shop.example/user", "https://…@shop.example/user"},
		{"https://shop.example/query?token=s3cret", "https://shop.example/query?…"},
		{"https://[2001:db8::1]:8443/a/b", "https://[2001:db8::1]:8443/a/…"},
		{"::not a url", "(unreadable URL)"},
	} {
		if got := shownURL(tt.raw); got != tt.want {
			t.Errorf("shownURL(%q) = %q, want %q", tt.raw, got, tt.want)
		}
	}
}
