//go:build wireinject

package wire

import (
	gwire "github.com/google/wire"
	"go.uber.org/zap"

	"github.com/agentauth/agentauth/adapters/rest"
	"github.com/agentauth/agentauth/config"
)

// OIDC serves with Keycloak logins (code flow and password), user_session
// cookies, Bearer access tokens, and SERVICE_API_KEY when it is set.
func OIDC(cfg config.Config, log *zap.Logger) (*rest.Server, func(), error) {
	panic(gwire.Build(oidcSet))
}
