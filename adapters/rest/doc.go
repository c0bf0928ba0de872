// Package rest is the HTTP edge of agentauth, built on Fiber (named rest so
// that it does not shadow net/http).
//
// Every request passes, in order: request id → access log → audit →
// recover → authenticate → authorize → handler. Recovery sits inside the
// audit stage on purpose: a handler that panics still gets its 500 and its
// audit record, and the audit stage answers only after the record is
// committed. GET /health is the one route registered before authentication.
//
// Handlers and middleware return errors; one ErrorHandler turns them into
// the single error body {"error":{"code","message"},"request_id"} and the
// status code, and never sends internal error text to the client.
package rest
