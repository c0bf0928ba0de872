// Package domain holds the rules of agentauth that do not depend on any
// framework, store or identity provider: roles and their permissions, the
// access decision, role extraction from OpenID Connect claims, sub-agent
// inheritance, and the audit record with its hash chain.
//
// It imports only the standard library and performs no I/O, so every rule
// can be tested exhaustively and reused by every adapter.
package domain
