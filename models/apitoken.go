package models

import "time"

// APIToken is a managed API token (`cmpay tokens create`). The token itself
// is never stored: only its SHA-256, which is what a request's token is
// looked up by. The token holds 256 random bits, so its digest cannot be
// reversed by guessing, and a fast, unsalted digest lets the lookup be one
// indexed equality (a slow password hash could not be indexed, and would
// cost every API request milliseconds).
type APIToken struct {
	// ID names the token in `cmpay tokens list` and `revoke` (tok_…).
	ID   string `gorm:"primaryKey;size:40"`
	Name string `gorm:"not null;size:100"`
	// ClientID binds the token to one client; empty: every client.
	ClientID string `gorm:"not null;size:100;default:''"`
	// Scopes, comma-separated (payments:read,payments:write).
	Scopes string `gorm:"not null;size:200"`
	// TokenHash is the hex SHA-256 of the token.
	TokenHash string    `gorm:"not null;size:64;uniqueIndex:idx_api_tokens_hash"`
	CreatedAt time.Time `gorm:"not null;autoCreateTime:false"`
	// LastUsedAt is written at most about once a minute per token, not on
	// every request.
	LastUsedAt *time.Time
	// RevokedAt is set by `cmpay tokens revoke`; the row stays, for the
	// record.
	RevokedAt *time.Time
}

// TableName keeps the table's name plain.
func (APIToken) TableName() string { return "api_tokens" }
