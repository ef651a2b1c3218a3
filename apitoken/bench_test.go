package apitoken_test

import (
	"testing"

	"github.com/cmpay/cmpay/apitoken"
	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// BenchmarkAuthenticate times what a request with a managed token costs,
// on both databases: uncached (a read by the token's hash, every time) and
// with the server's 10 s cache. Among 100 tokens; its use is written once
// a minute, so about once in a run.
//
//	go test -run '^$' -bench Authenticate ./apitoken/
func BenchmarkAuthenticate(b *testing.B) {
	for _, dialect := range dbtest.Dialects {
		b.Run(dialect, func(b *testing.B) {
			db := dbtest.Open(b, dialect)
			var secret string
			for range 100 {
				var err error
				_, secret, err = apitoken.NewStore(db.Gorm, apitoken.Options{}).Create(b.Context(), "ci", "", auth.DefaultScopes, nil)
				if err != nil {
					b.Fatal(err)
				}
			}
			for _, c := range []struct {
				name string
				opts apitoken.Options
			}{{"uncached", apitoken.Options{CacheTTL: -1}}, {"cached", apitoken.Options{}}} {
				b.Run(c.name, func(b *testing.B) {
					s := apitoken.NewStore(db.Gorm, c.opts)
					b.Cleanup(s.Close)
					b.ReportAllocs()
					for b.Loop() {
						if _, ok, err := s.Authenticate(b.Context(), secret); !ok || err != nil {
							b.Fatalf("refused: %v", err)
						}
					}
				})
			}
		})
	}
}
