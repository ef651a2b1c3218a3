package payments

import (
	"testing"
)

// BenchmarkValidateAndFingerprint is the CPU work of a create before the
// database: validation, money parsing, the fingerprint.
func BenchmarkValidateAndFingerprint(b *testing.B) {
	req := CreateRequest{ClientID: "client-1", Amount: "1234.5", Currency: "brl", Method: MethodPix, IdempotencyKey: "order-42"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := req.command(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseAmount(b *testing.B) {
	for _, text := range []string{"10.50", "1.05e1", "92233720368547758.07"} {
		b.Run(text, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseAmount(text, "BRL"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
