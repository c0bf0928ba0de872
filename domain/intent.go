package domain

import (
	"crypto/rand"
	"strings"
	"time"
)

// AuditIntent names the request on whose behalf a state change is made.
// Stores write it, with a short description of the change, in the same
// transaction as the change itself (a transactional outbox); the request's
// audit record removes it again in the transaction that commits the record.
// An intent that outlives its request therefore marks a change that was
// committed without its record (the service crashed, or the audit append
// failed after the change), and recovery turns it into a record.
type AuditIntent struct {
	// Key files the request's intents; empty until the request changes
	// something (EnsureKey).
	Key        string
	RequestID  string
	Subject    string
	Roles      []Role
	AuthMethod AuthMethod
	Client     string // the caller's address, as the edge saw it
	Method     string // HTTP method
	Path       string
}

// EnsureKey returns the intent's key, making one on the request's first
// change. The key is the server's own random value, unlike the request id,
// which a caller may choose (X-Request-ID): another request's record, with
// the same request id, never settles this request's changes. A request
// that changes nothing costs nothing.
func (in *AuditIntent) EnsureKey() string {
	if in.Key == "" {
		in.Key = rand.Text()
	}
	return in.Key
}

// PendingChange is one intent as stored: the request, the change it made
// and when that change was committed.
type PendingChange struct {
	Intent AuditIntent
	Change string
	At     time.Time
}

// RecoveredPrefix starts the reason of every record written by recovery, so
// an auditor can find them (reason LIKE 'recovered:%').
const RecoveredPrefix = "recovered: "

// RecoveredRecord is the audit record of a request whose changes (all of
// the same request, oldest first) were committed but whose own record was
// not. The decision is allow (the change was made); the status is 0 because
// nobody knows what, if anything, the caller was answered. The record's
// time is now, so that the chain's times keep increasing; the time of the
// change is in the reason.
func RecoveredRecord(changes []PendingChange, now time.Time) AuditRecord {
	first := changes[0]
	what := make([]string, len(changes))
	for i, c := range changes {
		what[i] = c.Change
	}
	return AuditRecord{
		Time:       now,
		RequestID:  first.Intent.RequestID,
		Subject:    first.Intent.Subject,
		Roles:      first.Intent.Roles,
		AuthMethod: first.Intent.AuthMethod,
		Method:     first.Intent.Method,
		Path:       first.Intent.Path,
		Client:     first.Intent.Client,
		IntentKey:  first.Intent.Key,
		Decision:   AuditAllow,
		Reason: RecoveredPrefix + strings.Join(what, ", ") + " at " + first.At.UTC().Format(time.RFC3339Nano) +
			"; the change was committed but its answer is unknown (crash or audit failure)",
	}
}

// GroupChanges splits pending changes, in the order stored, into one slice
// per request (per intent key), in the order each request first appears.
func GroupChanges(changes []PendingChange) [][]PendingChange {
	index := map[string]int{}
	var out [][]PendingChange
	for _, c := range changes {
		i, ok := index[c.Intent.Key]
		if !ok {
			i = len(out)
			index[c.Intent.Key] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], c)
	}
	return out
}

// ToolCallChange names the storing of a decided tool call in an intent.
func ToolCallChange(c ToolCall) string {
	return "record tool call " + c.ID + " (" + c.Tool + ": " + string(c.Decision.Effect) + ", " + string(c.Status) + ") in session " + c.Session
}

// LoginChange names a change to a login session or pending login in an
// intent. Only a prefix of the stored hash is named: enough to tell
// sessions apart, and the hash is never a credential anyway.
func LoginChange(action, idHash, subject string) string {
	s := action + " login " + idHash[:min(len(idHash), 12)]
	if subject != "" {
		s += " of " + subject
	}
	return s
}
