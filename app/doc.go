// Package app holds the use cases of agentauth: what a caller may do with
// sessions, settings and the audit log once the edge has authenticated it.
// It depends on domain and ports only; every store and identity provider is
// reached through a port, so the same use cases run in every deployment.
package app
