package config

import "time"

// DefaultRecoveryGrace is how long a change may wait for its audit record
// before recovery writes one (audit.recoveryGrace): far longer than a
// request holds on to a change it has made (statements and lock waits end
// after 30 s), so a request still on its way to its record, on this
// instance or another, is never recorded twice.
const DefaultRecoveryGrace = 5 * time.Minute
