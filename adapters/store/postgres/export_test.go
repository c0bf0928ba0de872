package postgres

// RetentionLock is the advisory lock key expression, for tests that hold it.
const RetentionLock = retentionLock
