package models

import "time"

// The support staff's tables: their accounts, their signed-in sessions, and
// the audit log of what they did. Package staff reads and writes them.

// StaffAccount is one person's account on the admin UI. Usernames are
// stored lower-case, so "Alice" and "alice" are one person. Accounts are
// never deleted, only disabled: the audit log keeps naming them.
type StaffAccount struct {
	ID       int64  `gorm:"primaryKey;autoIncrement"`
	Username string `gorm:"not null;size:64;uniqueIndex:idx_staff_accounts_username"`
	// Role is viewer, operator or admin.
	Role string `gorm:"not null;size:16"`
	// PasswordHash is a self-describing encoded hash ($argon2id$v=19$m=…,t=…,p=…$salt$hash):
	// its parameters travel with it, so they can be raised without
	// invalidating older hashes. Never a password.
	PasswordHash string `gorm:"not null;size:200"`
	// MustChangePassword is set for a temporary password, made up by the
	// server: its first sign-in leads to the account page until it is changed.
	MustChangePassword bool `gorm:"not null;default:false"`
	Disabled           bool `gorm:"not null;default:false"`

	CreatedAt         time.Time `gorm:"not null;autoCreateTime:false"`
	UpdatedAt         time.Time `gorm:"not null;autoUpdateTime:false"`
	PasswordChangedAt time.Time `gorm:"not null"`
	LastSignInAt      *time.Time
	DisabledAt        *time.Time
}

// StaffSession is a signed-in browser. The browser holds a random token;
// the table holds only its SHA-256, so a copy of the table signs nobody in.
// A session ends the idle timeout after its last use (LastUsedAt, or a
// newer use whose write is not stored yet), or at ExpiresAt (12 hours
// after sign-in), whichever comes first; signing out and disabling the
// account delete it.
type StaffSession struct {
	ID         string    `gorm:"primaryKey;size:64"`
	AccountID  int64     `gorm:"not null;index:idx_staff_sessions_account"`
	CreatedAt  time.Time `gorm:"not null;autoCreateTime:false"`
	LastUsedAt time.Time `gorm:"not null"`
	ExpiresAt  time.Time `gorm:"not null;index:idx_staff_sessions_expires"`
	// Address is where the sign-in came from.
	Address string `gorm:"not null;size:64;default:''"`
}

// StaffAuditEntry is one line of the audit log: who did what, when, from
// where, and how it ended. Rows are only ever inserted; on both databases a
// trigger refuses updates and deletes (database/migrations/0006_staff_audit.*.sql).
//
// Captures, cancels and refunds made in the admin are not here: the payments
// engine records each as an IdempotencyAttempt (transport "admin", with the
// actor and address) in the same statement as the change itself, and the
// audit page reads those rows beside these.
type StaffAuditEntry struct {
	ID int64     `gorm:"primaryKey;autoIncrement;index:idx_staff_audit_at,priority:2;index:idx_staff_audit_actor_at,priority:3;index:idx_staff_audit_action_at,priority:3"`
	At time.Time `gorm:"not null;index:idx_staff_audit_at,priority:1;index:idx_staff_audit_actor_at,priority:2;index:idx_staff_audit_action_at,priority:2"`
	// Actor is the staff member's username; for a failed sign-in, the
	// account's name, or "(unknown username)" when it is no account's (what
	// was typed is the Target); "(command line)" or "(server start)" for
	// changes made outside the UI.
	Actor   string `gorm:"not null;size:100;index:idx_staff_audit_actor_at,priority:1"`
	Address string `gorm:"not null;size:64;default:''"`
	// Action is what was done or tried: sign-in, sign-out, export,
	// capture, staff.add, password.change, … (staff.Action).
	Action string `gorm:"not null;size:32;index:idx_staff_audit_action_at,priority:1"`
	// Target is what it was done to: a username, a payment id, a path.
	Target string `gorm:"not null;size:200;default:''"`
	// Outcome is ok, failed, denied, started or error.
	Outcome string `gorm:"not null;size:16"`
	Detail  string `gorm:"not null;size:1000;default:''"`
}

// TableName keeps the audit log's table name short and plain.
func (StaffAuditEntry) TableName() string { return "staff_audit" }
