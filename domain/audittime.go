package domain

import "time"

// NotBefore raises the record's time (in the microseconds stores keep) to
// prev, the time of the record before it in the chain, when its clock was
// behind: another instance's clock, a clock set back, or two requests racing
// to the writer. Every writer calls it before Seal, so time never decreases
// along the chain and a time range is a range of sequence numbers.
func (r *AuditRecord) NotBefore(prev time.Time) {
	r.Time = r.Time.UTC().Truncate(time.Microsecond)
	if r.Time.Before(prev) {
		r.Time = prev.UTC()
	}
}
