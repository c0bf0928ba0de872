//go:build tools

// Package oauth2proxy pins oauth2-proxy v7.15.6, the peer `go tool task
// bench` measures beside agentauth (go build
// github.com/oauth2-proxy/oauth2-proxy/v7 in this folder), in a module of
// its own so that its dependencies stay out of agentauth's go.mod. Its
// go.mod has no replace directives to repeat.
package oauth2proxy

import _ "github.com/oauth2-proxy/oauth2-proxy/v7"
