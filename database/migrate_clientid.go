package database

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/clientid"
)

// normalizeClientIDs rewrites every stored client id to Unicode NFC, the
// form the API now compares them in (internal/clientid). It is Go, not SQL,
// because SQLite has no normalize() function.
//
// A key stored under both forms of one client id (two payments made before
// this version, one per form) cannot become one row: the decomposed row
// keeps its client id, so the key under the NFC form, the one every request
// now reaches, stays what it was.
func normalizeClientIDs(ctx context.Context, tx *gorm.DB) error {
	for _, table := range []string{"payments", "payment_events", "webhook_endpoints", "api_tokens", "idempotency_keys"} {
		var ids []string
		if err := tx.WithContext(ctx).Table(table).Distinct("client_id").Pluck("client_id", &ids).Error; err != nil {
			return fmt.Errorf("read %s client ids: %w", table, err)
		}
		for _, id := range ids {
			if clientid.Normalized(id) {
				continue
			}
			nfc := clientid.Normalize(id)
			q := tx.WithContext(ctx).Table(table).Where("client_id = ?", id)
			if table == "idempotency_keys" {
				q = q.Where("idempotency_key NOT IN (?)",
					tx.Table("idempotency_keys").Select("idempotency_key").Where("client_id = ?", nfc))
			}
			if err := q.Update("client_id", nfc).Error; err != nil {
				return fmt.Errorf("normalize %s client id %q: %w", table, id, err)
			}
		}
	}
	return nil
}
