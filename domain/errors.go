package domain

import "errors"

// Sentinel errors. Adapters wrap them with %w; the HTTP edge maps them to
// status codes with errors.Is.
var (
	// ErrUnauthenticated: no credential, or one that is missing, expired or invalid (401).
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrForbidden: authenticated, but the role's rights are not enough (403).
	ErrForbidden = errors.New("forbidden")
	// ErrNotFound: the resource does not exist or is not visible to the caller (404).
	ErrNotFound = errors.New("not found")
	// ErrInvalidInput: the request is malformed or a value is out of range (400).
	ErrInvalidInput = errors.New("invalid input")
	// ErrConflict: the request clashes with the current state (409).
	ErrConflict = errors.New("conflict")
	// ErrUnavailable: a dependency (identity provider, remote server) cannot answer now (503).
	ErrUnavailable = errors.New("unavailable")
	// ErrTooManyRequests: the caller must slow down (429).
	ErrTooManyRequests = errors.New("too many requests")
)

// ErrNotVisible: the resource exists but the caller may not see it. It
// matches ErrNotFound and reads the same, so the answer is a 404 that does
// not leak the resource's existence; the audit log records it as a refusal.
var ErrNotVisible error = notVisible{}

type notVisible struct{}

func (notVisible) Error() string { return ErrNotFound.Error() }

// Is makes errors.Is(err, ErrNotFound) hold.
func (notVisible) Is(target error) bool { return target == ErrNotFound }

// AccessDenied is the error of a refused access decision. It matches
// ErrForbidden and carries the explanation for the error body and the audit
// record.
type AccessDenied struct {
	Decision Decision
}

func (e *AccessDenied) Error() string { return e.Decision.Reason() }

// Is makes errors.Is(err, ErrForbidden) hold.
func (e *AccessDenied) Is(target error) bool { return target == ErrForbidden }
