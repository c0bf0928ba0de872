//go:build wireinject

package wire

import (
	gwire "github.com/google/wire"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/identity/hybrid"
	"github.com/agentauth/agentauth/adapters/rest"
	"github.com/agentauth/agentauth/config"
)

// Hybrid serves with every caller's roles taken from the central instance at
// auth.hybrid.remoteUrl; no role is assigned locally.
func Hybrid(cfg config.Config, log *zap.Logger) (*rest.Server, func(), error) {
	panic(gwire.Build(coreSet, restConfig, hybridConfig, hybrid.Set, noLogin))
}
