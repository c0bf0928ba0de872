//go:build tools

// Package hydra pins Ory Hydra v2.3.0, the OpenID provider the e2e suite
// builds (go build github.com/ory/hydra/v2 in this folder), in a module of
// its own: its dependencies stay out of agentauth's go.mod and of the
// zitadel peer's. The replace of gobuffalo/pop/v6 is Hydra's own (its
// go.mod), which a dependent module must repeat.
package hydra

import _ "github.com/ory/hydra/v2"
