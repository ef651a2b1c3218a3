package webhooks_test

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/webhooks"
)

// TestSealedSecrets: with WEBHOOK_SECRET_KEY the database holds no signing
// secret in the clear, secrets stored before the key are sealed at start,
// a key is rotated with the previous one beside it, a dispatcher without
// the right key signs nothing (and the delivery is retried), and one with
// it delivers with the secret each endpoint was given.
func TestSealedSecrets(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		key1, key2, wrong := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32), bytes.Repeat([]byte{3}, 32)
		e := newEnv(t, db, webhooks.Config{AllowPrivate: true})
		service := func(key, previous []byte) *webhooks.Service {
			t.Helper()
			wh, err := webhooks.New(db.Gorm, e.ev, webhooks.Config{AllowPrivate: true, RetryMin: 50 * time.Millisecond,
				SecretKey: key, PreviousSecretKey: previous, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			return wh
		}
		stored := func(id string) string {
			t.Helper()
			var row models.WebhookEndpoint
			if err := db.Gorm.Select("secret").Take(&row, "id = ?", id).Error; err != nil {
				t.Fatal(err)
			}
			return row.Secret
		}
		seal := func(wh *webhooks.Service, want webhooks.SealReport) {
			t.Helper()
			got, err := wh.SealSecrets(t.Context())
			if got != want || err != nil {
				t.Fatalf("SealSecrets() = %+v, %v; want %+v", got, err, want)
			}
		}

		// Before any key: stored as given, and nothing to seal.
		rcvA, rcvB := newReceiver(t, 0), newReceiver(t, 0)
		a, secretA, err := e.wh.CreateEndpoint(t.Context(), "", rcvA.srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		rcvA.secret.Store(&secretA)
		if got := stored(a.ID); got != secretA {
			t.Fatalf("without a key, stored %q for %q", got, secretA)
		}
		seal(e.wh, webhooks.SealReport{AsGiven: 1})

		// With a key: the old secret is sealed at start, once; new ones are
		// sealed when made.
		withKey1 := service(key1, nil)
		seal(withKey1, webhooks.SealReport{Sealed: 1})
		seal(withKey1, webhooks.SealReport{Kept: 1})
		b, secretB, err := withKey1.CreateEndpoint(t.Context(), "", rcvB.srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		rcvB.secret.Store(&secretB)
		for id, secret := range map[string]string{a.ID: secretA, b.ID: secretB} {
			if got := stored(id); !strings.HasPrefix(got, "e1:") || strings.Contains(got, secret) || len(got) > 100 {
				t.Errorf("endpoint %s: stored %q for %q", id, got, secret)
			}
		}

		// Rotation: the previous key opens, the new one seals.
		seal(service(key2, key1), webhooks.SealReport{Sealed: 2})
		withKey2 := service(key2, nil)
		seal(withKey2, webhooks.SealReport{Kept: 2})
		// Without the key, or with another, nothing opens.
		seal(service(nil, nil), webhooks.SealReport{Unopened: 2})
		seal(service(wrong, nil), webhooks.SealReport{Unopened: 2})

		// A dispatcher with the wrong key sends nothing and records why.
		stop := run(t, service(wrong, nil).Run)
		e.create(t, "shop-1", "sealed-1")
		waitFor(t, 10*time.Second, "both deliveries tried", func() bool {
			tried := 0
			for _, d := range e.deliveries(t) {
				if strings.HasPrefix(d.LastError, "not sent: ") {
					tried++
				}
			}
			return tried == 2
		})
		stop()
		for _, r := range []*receiver{rcvA, rcvB} {
			r.mu.Lock()
			calls := r.calls
			r.mu.Unlock()
			if calls != 0 {
				t.Fatalf("%d requests sent without the key", calls)
			}
		}

		// With the key, the retries arrive, signed with each endpoint's own
		// secret (the receivers check).
		run(t, withKey2.Run)
		waitFor(t, 15*time.Second, "both endpoints served", func() bool { return rcvA.distinct() == 1 && rcvB.distinct() == 1 })
		for _, r := range []*receiver{rcvA, rcvB} {
			r.mu.Lock()
			if len(r.bad) > 0 {
				t.Errorf("bad deliveries: %v", r.bad)
			}
			r.mu.Unlock()
		}
	})
}

// TestSealSecretsAtOnce: instances that start together seal each secret
// once between them, and every secret opens afterwards.
func TestSealSecretsAtOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		e := newEnv(t, db, webhooks.Config{AllowPrivate: true, EndpointsPerClient: 40})
		const endpoints, instances = 40, 3
		for i := range endpoints {
			if _, _, err := e.wh.CreateEndpoint(t.Context(), "", fmt.Sprintf("http://127.0.0.1:1/%d", i), nil); err != nil {
				t.Fatal(err)
			}
		}
		key := bytes.Repeat([]byte{9}, 32)
		var mu sync.Mutex
		var total webhooks.SealReport
		var wg sync.WaitGroup
		for range instances {
			wh, err := webhooks.New(db.Gorm, e.ev, webhooks.Config{AllowPrivate: true, SecretKey: key, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				r, err := wh.SealSecrets(t.Context())
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				total.Sealed, total.Kept = total.Sealed+r.Sealed, total.Kept+r.Kept
				mu.Unlock()
			})
		}
		wg.Wait()
		if total.Sealed != endpoints || total.Sealed+total.Kept != endpoints*instances {
			t.Errorf("%d instances sealed %d and kept %d of %d secrets; want each sealed once", instances, total.Sealed, total.Kept, endpoints)
		}
		wh, err := webhooks.New(db.Gorm, e.ev, webhooks.Config{AllowPrivate: true, SecretKey: key, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if r, err := wh.SealSecrets(t.Context()); err != nil || r != (webhooks.SealReport{Kept: endpoints}) {
			t.Errorf("after: %+v, %v; want every secret sealed and opening", r, err)
		}
	})
}
