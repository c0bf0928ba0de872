//go:build wireinject

package wire

import (
	gwire "github.com/google/wire"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/identity/apikey"
	"github.com/agentauth/agentauth/adapters/identity/debug"
	"github.com/agentauth/agentauth/adapters/identity/local"
	"github.com/agentauth/agentauth/adapters/rest"
	"github.com/agentauth/agentauth/config"
)

// Local serves with the local key file granting ADMIN.
func Local(cfg config.Config, log *zap.Logger) (*rest.Server, func(), error) {
	panic(gwire.Build(keyCoreSet, local.New))
}

// APIKey serves with SERVICE_API_KEY granting ADMIN.
func APIKey(cfg config.Config, log *zap.Logger) (*rest.Server, func(), error) {
	panic(gwire.Build(keyCoreSet, apikey.New))
}

// Debug serves with the four built-in debug keys.
func Debug(cfg config.Config, log *zap.Logger) (*rest.Server, func(), error) {
	panic(gwire.Build(keyCoreSet, debug.New))
}
