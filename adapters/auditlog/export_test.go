package auditlog

import "testing"

// SetRetentionStep makes a retention step at most n records for the test.
func SetRetentionStep(t *testing.T, n int64) {
	old := retentionStep
	retentionStep = n
	t.Cleanup(func() { retentionStep = old })
}
